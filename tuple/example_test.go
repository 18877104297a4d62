package tuple_test

import (
	"bytes"
	"fmt"

	"github.com/caskade/caskade/tuple"
)

func Example() {
	key := tuple.Tuple{"users", 42, []byte{0x00, 0x01}, nil, true}.Pack()
	fmt.Printf("% x\n", key)

	t, err := tuple.Unpack(key)
	if err != nil {
		panic(err)
	}
	fmt.Println(t)
	fmt.Printf("%T\n", t[1])

	// Output:
	// 02 75 73 65 72 73 00 15 2a 01 00 ff 01 00 00 27
	// ("users", 42, b"\x00\x01", <nil>, true)
	// int64
}

func ExampleTuple_Range() {
	begin, end := tuple.Tuple{"users"}.Range()
	alice := tuple.Tuple{"users", "alice"}.Pack()
	fmt.Println(bytes.Compare(begin, alice) <= 0 && bytes.Compare(alice, end) < 0)
	// Output: true
}

func ExampleTuple_PackWithVersionstamp() {
	key, err := tuple.Tuple{"log", tuple.IncompleteVersionstamp(0)}.PackWithVersionstamp([]byte{0xfe})
	if err != nil {
		panic(err)
	}
	// The last four bytes give the little-endian offset of the 10-byte
	// placeholder for the commit to fill in.
	fmt.Printf("% x\n", key)
	// Output: fe 02 6c 6f 67 00 33 ff ff ff ff ff ff ff ff ff ff 00 00 07 00 00 00
}

func ExampleUnpack_error() {
	_, err := tuple.Unpack([]byte{0x02, 'a', 'b'})
	fmt.Println(err)
	// Output: tuple: malformed encoding at offset 0 (type code 0x02): truncated element
}
