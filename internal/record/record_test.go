package record

import (
	"bytes"
	"errors"
	"testing"
)

func TestRecordRoundTrip(t *testing.T) {
	cases := []struct {
		name   string
		kind   Kind
		commit bool
		ver    uint64
		exp    int64
		key    []byte
		val    []byte
	}{
		{"put", KindPut, false, 1, 0, []byte("k"), []byte("v")},
		{"commit", KindPut, true, 1 << 40, 1700000000000, []byte("key"), bytes.Repeat([]byte("x"), 1000)},
		{"empty key and value", KindPut, true, 7, 0, []byte{}, nil},
		{"tombstone", KindDelete, true, 9, 0, []byte("gone"), nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := AppendRecord([]byte("prefix"), c.kind, c.commit, c.ver, c.exp, 0, c.key, c.val)
			b = b[len("prefix"):]
			if len(b) != EncodedSize(c.key, c.val) {
				t.Fatalf("size %d, want %d", len(b), EncodedSize(c.key, c.val))
			}
			r, err := Decode(b, Limits{})
			if err != nil {
				t.Fatal(err)
			}
			if r.Kind != c.kind || r.Commit != c.commit || r.Version != c.ver || r.Expiry != c.exp ||
				!bytes.Equal(r.Key, c.key) || !bytes.Equal(r.Value, c.val) || r.Size() != int64(len(b)) {
				t.Fatalf("decoded %+v", r)
			}
		})
	}
}

func TestSetCommit(t *testing.T) {
	b := AppendRecord(nil, KindPut, false, 3, 0, 0, []byte("a"), []byte("b"))
	SetCommit(b)
	r, err := Decode(b, Limits{})
	if err != nil || !r.Commit {
		t.Fatalf("got %+v, %v", r, err)
	}
}

// Every single-bit flip anywhere in a record must be detected.
func TestRecordBitFlips(t *testing.T) {
	b := AppendRecord(nil, KindPut, true, 42, 99, 0, []byte("hello"), []byte("world, a value"))
	for i := 0; i < len(b)*8; i++ {
		c := bytes.Clone(b)
		c[i/8] ^= 1 << (i % 8)
		if _, err := Decode(c, Limits{MaxKey: 1 << 16, MaxValue: 1 << 20}); err == nil {
			t.Fatalf("flip of bit %d not detected", i)
		}
	}
}

func TestRecordTruncation(t *testing.T) {
	b := AppendRecord(nil, KindPut, true, 42, 0, 0, []byte("hello"), []byte("world"))
	for n := 0; n < len(b); n++ {
		_, err := Decode(b[:n], Limits{})
		if !errors.Is(err, ErrTruncated) {
			t.Fatalf("prefix of %d bytes: err %v, want ErrTruncated", n, err)
		}
	}
}

func TestRecordLimits(t *testing.T) {
	b := AppendRecord(nil, KindPut, true, 1, 0, 0, []byte("hello"), []byte("world"))
	if _, err := Decode(b, Limits{MaxKey: 4}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("key limit: %v", err)
	}
	if _, err := Decode(b, Limits{MaxValue: 4}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("value limit: %v", err)
	}
}

func TestFileHeaders(t *testing.T) {
	d := AppendFileHeader(nil)
	h := AppendHintFileHeader(nil)
	if len(d) != FileHeaderSize || len(h) != FileHeaderSize {
		t.Fatalf("header sizes %d %d", len(d), len(h))
	}
	if merged, err := CheckFileHeader(d); err != nil || merged {
		t.Fatal(merged, err)
	}
	if merged, err := CheckFileHeader(AppendMergedFileHeader(nil)); err != nil || !merged {
		t.Fatal(merged, err)
	}
	if err := CheckHintFileHeader(h); err != nil {
		t.Fatal(err)
	}
	if _, err := CheckFileHeader(h); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("hint header accepted as data header: %v", err)
	}
	if _, err := CheckFileHeader(d[:5]); !errors.Is(err, ErrTruncated) {
		t.Fatalf("short header: %v", err)
	}
	bad := bytes.Clone(d)
	bad[8] = 9
	if _, err := CheckFileHeader(bad); !errors.Is(err, ErrUnsupportedVersion) {
		t.Fatalf("future version: %v", err)
	}
	bad = bytes.Clone(d)
	bad[15] ^= 1
	if _, err := CheckFileHeader(bad); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("damaged header: %v", err)
	}
}

func TestHintRoundTrip(t *testing.T) {
	in := []Hint{
		{Kind: KindPut, Version: 5, Expiry: 0, Offset: 16, ValLen: 100, Key: []byte("alpha")},
		{Kind: KindDelete, Version: 6, Offset: 200, Key: []byte("beta")},
		{Kind: KindPut, Version: 7, Expiry: 123456, Offset: 300, ValLen: 0, Key: []byte{}},
	}
	var b []byte
	for _, h := range in {
		b = AppendHint(b, h)
	}
	b = AppendHintTrailer(b, uint64(len(in)), 4096)
	for i, want := range in {
		h, tr, n, err := DecodeHint(b, Limits{})
		if err != nil || tr != nil {
			t.Fatalf("entry %d: %v %v", i, tr, err)
		}
		if h.Kind != want.Kind || h.Version != want.Version || h.Expiry != want.Expiry ||
			h.Offset != want.Offset || h.ValLen != want.ValLen || !bytes.Equal(h.Key, want.Key) {
			t.Fatalf("entry %d: got %+v want %+v", i, h, want)
		}
		b = b[n:]
	}
	_, tr, n, err := DecodeHint(b, Limits{})
	if err != nil || tr == nil || tr.Entries != 3 || tr.DataSize != 4096 || n != len(b) {
		t.Fatalf("trailer %+v n=%d err=%v", tr, n, err)
	}
}

func TestHintBitFlips(t *testing.T) {
	b := AppendHint(nil, Hint{Kind: KindPut, Version: 5, Offset: 16, ValLen: 3, Key: []byte("k")})
	for i := 0; i < len(b)*8; i++ {
		c := bytes.Clone(b)
		c[i/8] ^= 1 << (i % 8)
		if _, _, _, err := DecodeHint(c, Limits{MaxKey: 1 << 16, MaxValue: 1 << 20}); err == nil {
			t.Fatalf("flip of bit %d not detected", i)
		}
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(AppendRecord(nil, KindPut, true, 1, 0, 0, []byte("k"), []byte("v")))
	f.Add(AppendRecord(nil, KindDelete, false, 2, 5, 0, []byte("key"), nil))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		lim := Limits{MaxKey: 1 << 16, MaxValue: 1 << 24}
		r, err := Decode(b, lim)
		if err != nil {
			return
		}
		// A record that decodes re-encodes to the same bytes.
		again := AppendRecord(nil, r.Kind, r.Commit, r.Version, r.Expiry, r.Flags, r.Key, r.Value)
		if !bytes.Equal(again, b[:r.Size()]) {
			t.Fatalf("re-encoding differs")
		}
	})
}

func FuzzDecodeHint(f *testing.F) {
	f.Add(AppendHint(nil, Hint{Kind: KindPut, Version: 1, Offset: 16, ValLen: 1, Key: []byte("k")}))
	f.Add(AppendHintTrailer(nil, 3, 100))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, tr, n, err := DecodeHint(b, Limits{MaxKey: 1 << 16, MaxValue: 1 << 24})
		if err != nil {
			return
		}
		if n > len(b) {
			t.Fatalf("consumed %d of %d bytes", n, len(b))
		}
		var again []byte
		if tr != nil {
			again = AppendHintTrailer(nil, tr.Entries, tr.DataSize)
		} else {
			again = AppendHint(nil, h)
		}
		if !bytes.Equal(again, b[:n]) {
			t.Fatalf("re-encoding differs")
		}
	})
}

func TestRecordFlags(t *testing.T) {
	b := AppendRecord(nil, KindPut, true, 9, 0, 0xdeadbeef, []byte("k"), []byte("v"))
	r, err := Decode(b, Limits{})
	if err != nil || r.Flags != 0xdeadbeef {
		t.Fatalf("flags %x, %v", r.Flags, err)
	}
	tomb := AppendRecord(nil, KindDelete, true, 9, 0, 1, []byte("k"), nil)
	if _, err := Decode(tomb, Limits{}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("tombstone with flags accepted: %v", err)
	}
}

func TestCommonPrefix(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"abc", "", 0}, {"abc", "abd", 2}, {"abc", "abc", 3},
		{"ab", "abc", 2}, {"abc", "ab", 2}, {"x", "y", 0}, {"a\x00b", "a\x00c", 2},
	} {
		if got := CommonPrefix([]byte(c.a), []byte(c.b)); got != c.want {
			t.Errorf("CommonPrefix(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

// ValueOf accepts exactly the record the key directory describes: an
// intact put of that key at that version, whole; anything else is left to
// Decode to explain.
func TestValueOf(t *testing.T) {
	key, val := []byte("hello"), []byte("world, a value")
	for _, commit := range []bool{false, true} {
		b := AppendRecord(nil, KindPut, commit, 42, 99, 7, key, val)
		v, flags, ok := ValueOf(b, key, 42)
		if !ok || !bytes.Equal(v, val) || flags != 7 || cap(v) != len(v) {
			t.Fatalf("commit %v: got %q, flags %d, ok %v", commit, v, flags, ok)
		}
		for i := 0; i < len(b)*8; i++ {
			c := bytes.Clone(b)
			c[i/8] ^= 1 << (i % 8)
			if _, _, ok := ValueOf(c, key, 42); ok {
				t.Fatalf("flip of bit %d accepted", i)
			}
		}
		for n := range len(b) {
			if _, _, ok := ValueOf(b[:n], key, 42); ok {
				t.Fatalf("prefix of %d bytes accepted", n)
			}
		}
		if _, _, ok := ValueOf(append(bytes.Clone(b), 0), key, 42); ok {
			t.Fatal("a record with a byte after it accepted")
		}
		if _, _, ok := ValueOf(b, []byte("hellp"), 42); ok {
			t.Fatal("another key of the same length accepted")
		}
		if _, _, ok := ValueOf(b, []byte("hell"), 42); ok {
			t.Fatal("a shorter key accepted")
		}
		if _, _, ok := ValueOf(b, key, 41); ok {
			t.Fatal("another version accepted")
		}
		// Length fields that disagree with the span, under a valid checksum.
		for _, field := range []int{25, 29} {
			c := bytes.Clone(b)
			c[field]--
			SetCommit(c) // recomputes the checksum
			if _, _, ok := ValueOf(c, key, 42); ok {
				t.Fatalf("a record whose length field at %d is off accepted", field)
			}
		}
	}
	tomb := AppendRecord(nil, KindDelete, true, 42, 0, 0, key, nil)
	if _, _, ok := ValueOf(tomb, key, 42); ok {
		t.Fatal("a tombstone accepted")
	}
}
