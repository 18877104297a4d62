package record

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// Hint is one entry of a hint file: where a record lives in its data file,
// without its value.
//
//	offset size field
//	0      4    CRC-32C of bytes [4, end of entry)
//	4      1    kind (KindPut, KindDelete)
//	5      8    commit version
//	13     8    expiry, Unix milliseconds (0: never)
//	21     8    offset of the record in the data file
//	29     4    value length
//	33     4    key length
//	37     -    key
type Hint struct {
	Kind    Kind
	Version uint64
	Expiry  int64
	Offset  int64
	ValLen  uint32
	Key     []byte // aliases the decoded buffer
}

// AppendHint appends one hint entry to dst.
func AppendHint(dst []byte, h Hint) []byte {
	return appendHintEntry(dst, h.Kind, h.Version, h.Expiry, h.Offset, h.ValLen, h.Key)
}

// AppendHintTrailer appends the entry that closes a hint file: it records
// how many entries precede it and the size of the data file described.
func AppendHintTrailer(dst []byte, entries uint64, dataSize int64) []byte {
	return appendHintEntry(dst, kindHintTrailer, entries, 0, dataSize, 0, nil)
}

func appendHintEntry(dst []byte, kind Kind, version uint64, expiry, offset int64, vlen uint32, key []byte) []byte {
	start := len(dst)
	var hdr [HintHeaderSize]byte
	hdr[4] = byte(kind)
	binary.LittleEndian.PutUint64(hdr[5:], version)
	binary.LittleEndian.PutUint64(hdr[13:], uint64(expiry))
	binary.LittleEndian.PutUint64(hdr[21:], uint64(offset))
	binary.LittleEndian.PutUint32(hdr[29:], vlen)
	binary.LittleEndian.PutUint32(hdr[33:], uint32(len(key)))
	dst = append(dst, hdr[:]...)
	dst = append(dst, key...)
	binary.LittleEndian.PutUint32(dst[start:], crc32.Checksum(dst[start+4:], castagnoli))
	return dst
}

// HintTrailer is the decoded closing entry of a hint file.
type HintTrailer struct {
	Entries  uint64
	DataSize int64
}

// DecodeHint decodes the hint entry at the start of b and returns it with its
// encoded size. If the entry is the trailer, trailer is non-nil and h is
// zero. Errors wrap ErrTruncated or ErrCorrupt.
func DecodeHint(b []byte, lim Limits) (h Hint, trailer *HintTrailer, n int, err error) {
	if len(b) < HintHeaderSize {
		return Hint{}, nil, 0, ErrTruncated
	}
	kind := Kind(b[4])
	klen := binary.LittleEndian.Uint32(b[33:])
	vlen := binary.LittleEndian.Uint32(b[29:])
	if kind != kindHintTrailer && !validKind(kind) {
		return Hint{}, nil, 0, fmt.Errorf("%w: bad hint kind %#x", ErrCorrupt, b[4])
	}
	if err := lim.check(klen, vlen); err != nil {
		return Hint{}, nil, 0, err
	}
	n = HintHeaderSize + int(klen)
	if n < HintHeaderSize || len(b) < n {
		return Hint{}, nil, 0, ErrTruncated
	}
	if err := VerifyChecksum(b[:n]); err != nil {
		return Hint{}, nil, 0, err
	}
	version := binary.LittleEndian.Uint64(b[5:])
	offset := int64(binary.LittleEndian.Uint64(b[21:]))
	if kind == kindHintTrailer {
		if klen != 0 || vlen != 0 || binary.LittleEndian.Uint64(b[13:]) != 0 || offset < FileHeaderSize {
			return Hint{}, nil, 0, fmt.Errorf("%w: bad hint trailer", ErrCorrupt)
		}
		return Hint{}, &HintTrailer{Entries: version, DataSize: offset}, n, nil
	}
	if offset < FileHeaderSize {
		return Hint{}, nil, 0, fmt.Errorf("%w: hint offset %d inside the file header", ErrCorrupt, offset)
	}
	if kind == KindDelete && vlen != 0 {
		return Hint{}, nil, 0, fmt.Errorf("%w: tombstone hint with a value", ErrCorrupt)
	}
	return Hint{
		Kind:    kind,
		Version: version,
		Expiry:  int64(binary.LittleEndian.Uint64(b[13:])),
		Offset:  offset,
		ValLen:  vlen,
		Key:     b[HintHeaderSize:n:n],
	}, nil, n, nil
}
