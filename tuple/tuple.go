// Package tuple encodes tuples of typed values as byte strings whose
// bytewise order matches the order of the tuples, byte-compatible with the
// FoundationDB tuple layer (design/tuple.md in apple/foundationdb). Its names
// follow the FoundationDB Go binding (package fdb/tuple), so code written
// against that binding ports by changing the import path, except for
// ranges: Tuple.Range returns two []byte where the binding has
// FDBRangeKeys and FDBRangeKeySelectors.
//
// # Types
//
// Pack accepts these element types:
//
//	nil                                  null (0x00)
//	[]byte                               byte string (0x01)
//	string                               text string (0x02), written as its bytes
//	Tuple                                nested tuple (0x05)
//	int, int8, int16, int32, int64,
//	uint, uint8, uint16, uint32, uint64,
//	uintptr, *big.Int, big.Int           integer (0x0b-0x1d)
//	float32                              32-bit float (0x20)
//	float64                              64-bit float (0x21)
//	bool                                 false (0x26), true (0x27)
//	UUID                                 UUID (0x30)
//	Versionstamp                         96-bit versionstamp (0x33)
//
// Unpack returns nil, []byte, string, Tuple, int64, uint64, *big.Int,
// float32, float64, bool, UUID and Versionstamp. An integer decodes to int64
// if it fits, else to uint64 if it fits, else to *big.Int, whatever form it
// was encoded in. Integers of magnitude up to 2^2040-1 (255 bytes) can be
// encoded.
//
// # Canonical and accepted forms
//
// Pack writes the canonical form, as the FoundationDB Go and Java bindings
// do: integers use the shortest of the 0x0c-0x1c forms, and 0x0b/0x1d only
// for magnitudes of 9 to 255 bytes. Unpack also accepts the other integer
// forms other writers produce, such as the Python binding's 0x1d 0x08 ff*8
// for 2^64-1, or integers with leading zero bytes; such values unpack to the
// same value (and Go type) as the canonical form, so re-packing them gives
// the canonical bytes. Every other element has exactly one encoding.
//
// Text strings are not checked for valid UTF-8, on either side: a Go string
// is packed as its bytes and unpacked back to the same bytes, as in the
// FoundationDB Go binding (the Java binding rejects invalid UTF-8).
//
// # Order
//
// For tuples of supported types, bytes.Compare of the packed forms orders
// tuples element by element, a tuple that is a prefix of another sorting
// first. Elements of different kinds sort by type code: null, bytes, string,
// nested tuple, integer, float32, float64, false, true, UUID, versionstamp.
// Within a kind: integers by value; floats by IEEE 754 total order (negative
// NaNs, -Inf, negative numbers, -0, +0, positive numbers, +Inf, positive
// NaNs); byte and text strings, UUIDs and versionstamps bytewise; nested
// tuples recursively.
//
// # Ownership and concurrency
//
// Packing never retains or modifies the tuple or the prefix passed to it; the
// returned slices are newly allocated and belong to the caller. Unpack copies
// out of its input: the returned Tuple never aliases it. A Tuple is a plain
// slice: it is safe to pack, print or read from several goroutines at once as
// long as none of them modifies it.
package tuple

import (
	"fmt"
	"math/big"
	"strconv"
	"strings"
)

// TupleElement is one element of a Tuple. Go cannot restrict an interface to
// a list of types, so this is any value; Pack panics and PackErr fails on an
// element of a type not listed in the package documentation.
type TupleElement interface{}

// Tuple is an ordered list of elements that packs to an order-preserving byte
// string. A Tuple may hold other Tuples, which are encoded as nested tuples.
type Tuple []TupleElement

// UUID is a 16-byte RFC 4122 UUID in network byte order. It packs as type
// code 0x30 followed by its 16 bytes, and sorts bytewise.
type UUID [16]byte

// String returns the UUID in the usual 8-4-4-4-12 hexadecimal form.
func (u UUID) String() string {
	return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}

// Versionstamp is a 96-bit FoundationDB versionstamp: a 10-byte transaction
// version (8-byte big-endian commit version and 2-byte batch order) assigned
// at commit, and a 2-byte user version that orders writes within one
// transaction. A versionstamp whose TransactionVersion is all 0xff bytes is
// incomplete: it is a placeholder for the commit to fill in, and can only be
// packed by PackWithVersionstamp.
type Versionstamp struct {
	// TransactionVersion is the 10-byte version assigned at commit, or ten
	// 0xff bytes for an incomplete versionstamp.
	TransactionVersion [10]byte
	// UserVersion orders versionstamps within one transaction.
	UserVersion uint16
}

// incompleteTransactionVersion marks an incomplete Versionstamp.
var incompleteTransactionVersion = [10]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

// versionstampLength is the encoded size of a Versionstamp, without its type
// code.
const versionstampLength = 12

// IncompleteVersionstamp returns a placeholder Versionstamp with the given
// user version, to be completed at commit. A tuple holding it must be packed
// with PackWithVersionstamp.
func IncompleteVersionstamp(userVersion uint16) Versionstamp {
	return Versionstamp{TransactionVersion: incompleteTransactionVersion, UserVersion: userVersion}
}

// incomplete reports whether v is a placeholder.
func (v Versionstamp) incomplete() bool {
	return v.TransactionVersion == incompleteTransactionVersion
}

// Bytes returns the 12-byte encoding of v: the transaction version followed
// by the big-endian user version. The slice is newly allocated.
func (v Versionstamp) Bytes() []byte {
	b := make([]byte, versionstampLength)
	copy(b, v.TransactionVersion[:])
	b[10] = byte(v.UserVersion >> 8)
	b[11] = byte(v.UserVersion)
	return b
}

// String returns a readable form, such as Versionstamp(\x00\x00\x00\xaa\x00\xbb\x00\xcc\x00\xdd, 620).
func (v Versionstamp) String() string {
	return fmt.Sprintf("Versionstamp(%s, %d)", printable(v.TransactionVersion[:]), v.UserVersion)
}

// String returns a readable form of t, the same as the FoundationDB Go
// binding prints: elements in parentheses separated by ", ", strings quoted
// as Go literals, byte strings as b"..." with non-printable bytes as \xNN,
// nil as <nil>, UUIDs as UUID(...), and other values as fmt's %v prints them.
func (t Tuple) String() string {
	var sb strings.Builder
	writeTuple(&sb, t)
	return sb.String()
}

func writeTuple(sb *strings.Builder, t Tuple) {
	sb.WriteByte('(')
	for i, el := range t {
		if i > 0 {
			sb.WriteString(", ")
		}
		switch el := el.(type) {
		case Tuple:
			writeTuple(sb, el)
		case nil:
			sb.WriteString("<nil>")
		case string:
			sb.WriteString(strconv.Quote(el))
		case []byte:
			sb.WriteString(`b"`)
			sb.WriteString(printable(el))
			sb.WriteByte('"')
		case UUID:
			sb.WriteString("UUID(")
			sb.WriteString(el.String())
			sb.WriteByte(')')
		case big.Int:
			sb.WriteString(el.String())
		default:
			fmt.Fprintf(sb, "%v", el)
		}
	}
	sb.WriteByte(')')
}

// printable renders b with printable ASCII as is, a backslash as \\ and every
// other byte as \xNN, as the FoundationDB bindings print keys.
func printable(b []byte) string {
	const hex = "0123456789abcdef"
	var sb strings.Builder
	sb.Grow(len(b))
	for _, c := range b {
		switch {
		case c == '\\':
			sb.WriteString(`\\`)
		case c >= 0x20 && c < 0x7f:
			sb.WriteByte(c)
		default:
			sb.WriteString(`\x`)
			sb.WriteByte(hex[c>>4])
			sb.WriteByte(hex[c&0x0f])
		}
	}
	return sb.String()
}
