module github.com/caskade/caskade

go 1.26
