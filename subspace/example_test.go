package subspace_test

import (
	"fmt"

	"github.com/caskade/caskade/subspace"
	"github.com/caskade/caskade/tuple"
)

func Example() {
	users := subspace.Sub("app").Sub("users")
	key := users.Pack(tuple.Tuple{"alice", 1})
	fmt.Println(users)

	t, err := users.Unpack(key)
	if err != nil {
		panic(err)
	}
	fmt.Println(t)

	begin, end := users.Range()
	fmt.Printf("% x\n% x\n", begin, end)
	// Output:
	// Subspace(rawPrefix=\x02app\x00\x02users\x00)
	// ("alice", 1)
	// 02 61 70 70 00 02 75 73 65 72 73 00 00
	// 02 61 70 70 00 02 75 73 65 72 73 00 ff
}
