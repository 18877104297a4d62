// Package record is caskade's on-disk record codec. It is a leaf package: it
// imports only the standard library.
//
// A data file starts with a FileHeaderSize-byte header (magic and format
// version) followed by records. Every record is
//
//	offset size field
//	0      4    CRC-32C (Castagnoli) of bytes [4, end of record)
//	4      1    kind (KindPut, KindDelete) with FlagCommit set on the last
//	            record of an atomic batch
//	5      8    commit version, little-endian
//	13     8    expiry in Unix milliseconds (0: never), little-endian
//	21     4    flags: 32 bits the application keeps beside the value
//	            (memcached's client flags), little-endian
//	25     4    key length, little-endian
//	29     4    value length, little-endian
//	33     -    key, then value
//
// A batch is a run of records sharing one version whose last record carries
// FlagCommit; recovery applies a batch only when it sees that marker, so a
// crash never leaves half a batch visible.
//
// A hint file summarises a sealed data file: the same header with a different
// magic, then one hint entry per record (kind, version, expiry, offset of the
// record in the data file, value length, key), each with its own CRC-32C, and
// a trailer entry that records the data file's size and the entry count, so a
// hint that was cut short or belongs to another file is detected.
package record

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// Kind is the type of a record.
type Kind uint8

const (
	// KindPut sets a key to a value.
	KindPut Kind = 1
	// KindDelete is a tombstone: the key has no value from this version on.
	KindDelete Kind = 2
	// kindHintTrailer ends a hint file.
	kindHintTrailer Kind = 0x7f
	// FlagCommit marks the last record of an atomic batch.
	FlagCommit Kind = 0x80
)

// Sizes of the fixed parts of the formats.
const (
	FileHeaderSize  = 16
	HeaderSize      = 33
	HintHeaderSize  = 37
	formatVersion   = 1
	hintTrailerSize = HintHeaderSize
)

var (
	dataMagic  = [8]byte{'c', 'a', 's', 'k', 'd', 'a', 't', 'a'}
	mergeMagic = [8]byte{'c', 'a', 's', 'k', 'm', 'e', 'r', 'g'}
	hintMagic  = [8]byte{'c', 'a', 's', 'k', 'h', 'i', 'n', 't'}
	castagnoli = crc32.MakeTable(crc32.Castagnoli)
)

// Limits bounds the lengths a decoder accepts before it trusts them enough to
// allocate or slice. Zero fields mean "no limit beyond the format's own".
type Limits struct {
	MaxKey   uint32
	MaxValue uint32
}

func (l Limits) check(klen, vlen uint32) error {
	if l.MaxKey > 0 && klen > l.MaxKey {
		return fmt.Errorf("%w: key length %d exceeds %d", ErrCorrupt, klen, l.MaxKey)
	}
	if l.MaxValue > 0 && vlen > l.MaxValue {
		return fmt.Errorf("%w: value length %d exceeds %d", ErrCorrupt, vlen, l.MaxValue)
	}
	return nil
}

// Header is the fixed part of a record.
type Header struct {
	Kind    Kind // without FlagCommit
	Commit  bool // FlagCommit was set
	Version uint64
	Expiry  int64 // Unix milliseconds, 0 for none
	Flags   uint32
	KeyLen  uint32
	ValLen  uint32
}

// Size is the encoded size of the whole record.
func (h Header) Size() int64 { return HeaderSize + int64(h.KeyLen) + int64(h.ValLen) }

// Record is a decoded record. Key and Value alias the buffer it was decoded
// from.
type Record struct {
	Header
	Key   []byte
	Value []byte
}

func validKind(k Kind) bool { return k == KindPut || k == KindDelete }

// EncodedSize is the size AppendRecord adds for a key and value.
func EncodedSize(key, value []byte) int { return HeaderSize + len(key) + len(value) }

// AppendRecord appends the encoding of one record to dst and returns the
// extended slice. It does not retain key or value.
func AppendRecord(dst []byte, kind Kind, commit bool, version uint64, expiry int64, flags uint32, key, value []byte) []byte {
	start := len(dst)
	k := kind
	if commit {
		k |= FlagCommit
	}
	var hdr [HeaderSize]byte
	hdr[4] = byte(k)
	binary.LittleEndian.PutUint64(hdr[5:], version)
	binary.LittleEndian.PutUint64(hdr[13:], uint64(expiry))
	binary.LittleEndian.PutUint32(hdr[21:], flags)
	binary.LittleEndian.PutUint32(hdr[25:], uint32(len(key)))
	binary.LittleEndian.PutUint32(hdr[29:], uint32(len(value)))
	dst = append(dst, hdr[:]...)
	dst = append(dst, key...)
	dst = append(dst, value...)
	crc := crc32.Checksum(dst[start+4:], castagnoli)
	binary.LittleEndian.PutUint32(dst[start:], crc)
	return dst
}

// SetCommit sets FlagCommit on the record that starts at rec and fixes its
// checksum. rec must hold the whole encoded record.
func SetCommit(rec []byte) {
	rec[4] |= byte(FlagCommit)
	binary.LittleEndian.PutUint32(rec, crc32.Checksum(rec[4:], castagnoli))
}

// DecodeHeader decodes the fixed part of a record without checking the CRC
// (which covers the key and value too). It checks the kind and the lengths
// against lim.
func DecodeHeader(b []byte, lim Limits) (Header, error) {
	if len(b) < HeaderSize {
		return Header{}, ErrTruncated
	}
	k := Kind(b[4])
	h := Header{
		Kind:    k &^ FlagCommit,
		Commit:  k&FlagCommit != 0,
		Version: binary.LittleEndian.Uint64(b[5:]),
		Expiry:  int64(binary.LittleEndian.Uint64(b[13:])),
		Flags:   binary.LittleEndian.Uint32(b[21:]),
		KeyLen:  binary.LittleEndian.Uint32(b[25:]),
		ValLen:  binary.LittleEndian.Uint32(b[29:]),
	}
	if !validKind(h.Kind) {
		return Header{}, fmt.Errorf("%w: bad record kind %#x", ErrCorrupt, b[4])
	}
	if h.Kind == KindDelete && (h.ValLen != 0 || h.Flags != 0) {
		return Header{}, fmt.Errorf("%w: tombstone with a value", ErrCorrupt)
	}
	if err := lim.check(h.KeyLen, h.ValLen); err != nil {
		return Header{}, err
	}
	return h, nil
}

// KeyOf returns the key of the record at the start of b, which must hold a
// record already verified (by Decode or a scan). It aliases b.
func KeyOf(b []byte) []byte {
	n := binary.LittleEndian.Uint32(b[25:])
	return b[HeaderSize : HeaderSize+n : HeaderSize+n]
}

// CommonPrefix returns the length of the longest prefix that the keys a
// and b share.
func CommonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// Decode decodes the record at the start of b and verifies its checksum. It
// returns ErrTruncated when b ends before the record does and an error
// wrapping ErrCorrupt when the record is damaged. Key and Value alias b.
func Decode(b []byte, lim Limits) (Record, error) {
	h, err := DecodeHeader(b, lim)
	if err != nil {
		return Record{}, err
	}
	n := h.Size()
	if int64(len(b)) < n {
		return Record{}, ErrTruncated
	}
	if err := VerifyChecksum(b[:n]); err != nil {
		return Record{}, err
	}
	kend := HeaderSize + int(h.KeyLen)
	return Record{Header: h, Key: b[HeaderSize:kend:kend], Value: b[kend:n:n]}, nil
}

// ValueOf checks that rec, exactly one encoded record, is an intact put of
// key at version, and returns its value (aliasing rec) and flags. It is the
// read path's check of a record the key directory points to, without
// building a Record: ok is false if anything differs, and Decode then says
// what.
func ValueOf(rec, key []byte, version uint64) (value []byte, flags uint32, ok bool) {
	kend := HeaderSize + len(key)
	if len(rec) < kend || Kind(rec[4])&^FlagCommit != KindPut ||
		binary.LittleEndian.Uint32(rec[25:]) != uint32(len(key)) ||
		binary.LittleEndian.Uint32(rec[29:]) != uint32(len(rec)-kend) ||
		binary.LittleEndian.Uint64(rec[5:]) != version ||
		string(rec[HeaderSize:kend]) != string(key) ||
		crc32.Checksum(rec[4:], castagnoli) != binary.LittleEndian.Uint32(rec) {
		return nil, 0, false
	}
	return rec[kend:len(rec):len(rec)], binary.LittleEndian.Uint32(rec[21:]), true
}

// VerifyChecksum checks the CRC of one whole encoded record (or hint entry).
func VerifyChecksum(rec []byte) error {
	if len(rec) < 4 {
		return ErrTruncated
	}
	return CompareChecksum(binary.LittleEndian.Uint32(rec), crc32.Checksum(rec[4:], castagnoli))
}

// UpdateChecksum returns crc extended by p: a record's checksum is
// UpdateChecksum(0, record[4:]), which may be computed a piece at a time,
// for a record too large to hold in memory at once.
func UpdateChecksum(crc uint32, p []byte) uint32 { return crc32.Update(crc, castagnoli, p) }

// CompareChecksum returns the error VerifyChecksum gives for a record
// whose stored checksum is want and whose bytes sum to got, or nil if they
// are equal.
func CompareChecksum(want, got uint32) error {
	if got != want {
		return fmt.Errorf("%w: checksum mismatch (stored %08x, computed %08x)", ErrCorrupt, want, got)
	}
	return nil
}

// AppendFileHeader appends the header of a data file.
func AppendFileHeader(dst []byte) []byte { return appendHeader(dst, dataMagic) }

// AppendMergedFileHeader appends the header of a data file written by merge.
// Such a file is complete before it gets its name, so it can never have a
// torn tail, and recovery never treats it as the file that took appends.
func AppendMergedFileHeader(dst []byte) []byte { return appendHeader(dst, mergeMagic) }

// AppendHintFileHeader appends the header of a hint file.
func AppendHintFileHeader(dst []byte) []byte { return appendHeader(dst, hintMagic) }

func appendHeader(dst []byte, magic [8]byte) []byte {
	dst = append(dst, magic[:]...)
	dst = binary.LittleEndian.AppendUint32(dst, formatVersion)
	return binary.LittleEndian.AppendUint32(dst, crc32.Checksum(append(magic[:], byte(formatVersion)), castagnoli))
}

// CheckFileHeader verifies a data file header and reports whether merge
// wrote the file.
func CheckFileHeader(b []byte) (merged bool, err error) {
	if len(b) >= 8 && string(b[:8]) == string(mergeMagic[:]) {
		return true, checkHeader(b, mergeMagic)
	}
	return false, checkHeader(b, dataMagic)
}

// CheckHintFileHeader verifies a hint file header.
func CheckHintFileHeader(b []byte) error { return checkHeader(b, hintMagic) }

func checkHeader(b []byte, magic [8]byte) error {
	if len(b) < FileHeaderSize {
		return ErrTruncated
	}
	want := appendHeader(nil, magic)
	if string(b[:8]) != string(magic[:]) {
		return fmt.Errorf("%w: bad magic %q", ErrCorrupt, b[:8])
	}
	if v := binary.LittleEndian.Uint32(b[8:]); v != formatVersion {
		return fmt.Errorf("%w: format version %d, want %d", ErrUnsupportedVersion, v, formatVersion)
	}
	if string(b[:FileHeaderSize]) != string(want) {
		return fmt.Errorf("%w: bad file header", ErrCorrupt)
	}
	return nil
}
