module github.com/caskade/caskade

go 1.26

require github.com/tidwall/btree v1.8.2
