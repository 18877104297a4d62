// Package subspace names regions of the key space by a byte prefix, usually
// the packed form of a tuple, following the FoundationDB Go binding's
// subspace package: a Subspace packs tuples into keys under its prefix,
// unpacks such keys back into tuples without the prefix, and gives the range
// of keys below it.
//
// A subspace with prefix P covers, as Range reports, the half-open range
// [P+0x00, P+0xff): every key P+t.Pack() for a non-empty tuple t. The bare
// prefix P lies outside that range, although Contains(P) is true and
// Unpack(P) returns the empty tuple, as in FoundationDB.
//
// Subspaces are immutable and safe for concurrent use. Every constructor
// copies the bytes it is given; every method that returns bytes returns a
// newly allocated slice that belongs to the caller, and no method retains or
// modifies its arguments. Subspaces made by this package are comparable with
// ==, equal exactly when their prefixes are equal, and may be map keys.
package subspace

import (
	"fmt"
	"strings"

	"github.com/caskade/caskade/tuple"
)

// Subspace is a region of the key space: all keys that start with its
// prefix.
type Subspace interface {
	// Sub returns the Subspace whose prefix is this prefix followed by the
	// packed tuple of el. Like tuple.Tuple.Pack, it panics on elements that
	// cannot be packed.
	Sub(el ...tuple.TupleElement) Subspace

	// Bytes returns a copy of the prefix.
	Bytes() []byte

	// Pack returns the prefix followed by t.Pack(). It panics in the same
	// cases as tuple.Tuple.Pack.
	Pack(t tuple.Tuple) []byte

	// PackWithVersionstamp returns t.PackWithVersionstamp(prefix): the key
	// for a set-versionstamped-key operation, with the placeholder offset
	// counted from the start of the key, prefix included. t must hold
	// exactly one incomplete tuple.Versionstamp.
	PackWithVersionstamp(t tuple.Tuple) ([]byte, error)

	// Unpack returns the tuple encoded in k after the prefix. A key that does
	// not start with the prefix gives ErrNotInSubspace; a malformed suffix
	// gives an error wrapping the tuple package's *tuple.DecodeError (its
	// offset counts from the end of the prefix). The bare prefix unpacks to
	// the empty tuple.
	Unpack(k []byte) (tuple.Tuple, error)

	// Contains reports whether k starts with the prefix. It is true of the
	// bare prefix too, which Range excludes.
	Contains(k []byte) bool

	// Range returns the half-open key range [prefix+0x00, prefix+0xff) that
	// holds every key of a tuple packed in this subspace.
	Range() (begin, end []byte)
}

// subspace holds its prefix as a string, which makes it immutable and
// comparable.
type subspace struct {
	prefix string
}

// AllKeys returns the Subspace with the empty prefix, which contains every
// key.
func AllKeys() Subspace {
	return subspace{}
}

// Sub returns the Subspace whose prefix is the packed tuple of el. It panics,
// like tuple.Tuple.Pack, on elements that cannot be packed.
func Sub(el ...tuple.TupleElement) Subspace {
	return subspace{prefix: string(tuple.Tuple(el).Pack())}
}

// FromBytes returns the Subspace with prefix b, which need not be a packed
// tuple. b is copied.
func FromBytes(b []byte) Subspace {
	return subspace{prefix: string(b)}
}

// Sub implements Subspace.
func (s subspace) Sub(el ...tuple.TupleElement) Subspace {
	return subspace{prefix: s.prefix + string(tuple.Tuple(el).Pack())}
}

// Bytes implements Subspace.
func (s subspace) Bytes() []byte {
	return []byte(s.prefix)
}

// Pack implements Subspace.
func (s subspace) Pack(t tuple.Tuple) []byte {
	return s.withSuffix(t.Pack()...)
}

// PackWithVersionstamp implements Subspace.
func (s subspace) PackWithVersionstamp(t tuple.Tuple) ([]byte, error) {
	return t.PackWithVersionstamp([]byte(s.prefix))
}

// Unpack implements Subspace.
func (s subspace) Unpack(k []byte) (tuple.Tuple, error) {
	if !s.Contains(k) {
		return nil, ErrNotInSubspace
	}
	t, err := tuple.Unpack(k[len(s.prefix):])
	if err != nil {
		return nil, fmt.Errorf("subspace: key after %d-byte prefix: %w", len(s.prefix), err)
	}
	return t, nil
}

// Contains implements Subspace.
func (s subspace) Contains(k []byte) bool {
	return len(k) >= len(s.prefix) && string(k[:len(s.prefix)]) == s.prefix
}

// Range implements Subspace.
func (s subspace) Range() (begin, end []byte) {
	return s.withSuffix(0x00), s.withSuffix(0xff)
}

// String returns a readable form, the same as the FoundationDB Go binding
// prints: Subspace(rawPrefix=...) with printable ASCII as is, a backslash as
// \\ and other bytes as \xNN.
func (s subspace) String() string {
	return "Subspace(rawPrefix=" + printable(s.prefix) + ")"
}

// withSuffix returns a new slice holding the prefix followed by suffix.
func (s subspace) withSuffix(suffix ...byte) []byte {
	b := make([]byte, len(s.prefix)+len(suffix))
	copy(b, s.prefix)
	copy(b[len(s.prefix):], suffix)
	return b
}

// printable renders s as the FoundationDB bindings print keys.
func printable(s string) string {
	const hex = "0123456789abcdef"
	var sb strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
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
