package caskade

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"time"
)

// dumpHeader begins every dump stream; see Dump for the format.
const dumpHeader = "caskade-dump 1\n"

// ErrBadDump means a dump stream is malformed or damaged.
var ErrBadDump = errors.New("caskade: bad dump stream")

// DumpStats counts what Dump or Load handled.
type DumpStats struct {
	Pairs    int   // pairs written (by Load: loaded)
	Bytes    int64 // key and value bytes of those pairs
	Expired  int   // pairs Load skipped because their expiry had passed
	Duration time.Duration
}

// Dump writes every live pair of a snapshot taken now to w in the dump
// format, in key order. Load reads it. The format is:
//
//	"caskade-dump 1\n"                   the header
//	then one frame per pair:
//	  'p'                                 frame kind: a pair
//	  CRC-32C (4 bytes, little-endian)    of everything after it in the frame
//	  key length    (uvarint)
//	  value length  (uvarint)
//	  expiry        (uvarint: Unix milliseconds, 0 for none)
//	  flags         (uvarint, see SetOptions)
//	  key, value
//	then the end frame:
//	  'e', CRC-32C (4 bytes), pair count (uvarint)
//
// Pairs come in key order. Every frame carries its own checksum, so a
// stream can be loaded as it arrives and damage is caught where it occurs;
// the end frame tells a complete dump from a cut one, and ends the stream
// (Load refuses anything after it).
func (db *DB) Dump(ctx context.Context, w io.Writer) (DumpStats, error) {
	start := time.Now()
	var st DumpStats
	it, err := db.NewIterator(nil)
	if err != nil {
		return st, err
	}
	defer it.Close()
	bw := bufio.NewWriterSize(w, 1<<20)
	if _, err := bw.WriteString(dumpHeader); err != nil {
		return st, err
	}
	var frame []byte
	for ok := it.First(); ok; ok = it.Next() {
		if st.Pairs%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return st, err
			}
		}
		v := it.Value()
		if err := it.Err(); err != nil {
			return st, err
		}
		var exp uint64
		if t := it.Info().ExpiresAt; !t.IsZero() {
			exp = uint64(t.UnixMilli())
		}
		frame = append(frame[:0], 'p', 0, 0, 0, 0)
		frame = binary.AppendUvarint(frame, uint64(len(it.Key())))
		frame = binary.AppendUvarint(frame, uint64(len(v)))
		frame = binary.AppendUvarint(frame, exp)
		frame = binary.AppendUvarint(frame, uint64(it.Info().Flags))
		frame = append(frame, it.Key()...)
		frame = append(frame, v...)
		binary.LittleEndian.PutUint32(frame[1:], crc32.Checksum(frame[5:], castagnoli))
		if _, err := bw.Write(frame); err != nil {
			return st, err
		}
		st.Pairs++
		st.Bytes += int64(len(it.Key()) + len(v))
	}
	frame = append(frame[:0], 'e', 0, 0, 0, 0)
	frame = binary.AppendUvarint(frame, uint64(st.Pairs))
	binary.LittleEndian.PutUint32(frame[1:], crc32.Checksum(frame[5:], castagnoli))
	if _, err := bw.Write(frame); err != nil {
		return st, err
	}
	st.Duration = time.Since(start)
	return st, bw.Flush()
}

// DefaultLoadBatchBytes is Load's default batch size.
const DefaultLoadBatchBytes = 1 << 20

// LoadOptions configure Load.
type LoadOptions struct {
	// BatchBytes is the size of the batches Load commits (default
	// DefaultLoadBatchBytes). Batches that fit in the CPU's caches load
	// fastest; larger ones only make each atomic step bigger.
	BatchBytes int
	// Progress, if set, is called after each batch with the totals so far.
	Progress func(DumpStats)
}

// Load reads a dump stream from r and writes its pairs in large atomic
// batches, then syncs once. Pairs whose expiry has passed are skipped. On a
// damaged or cut stream it stops with an error wrapping ErrBadDump that
// gives the byte offset of the frame at fault; the batches before the
// damage stay written. On an error, the returned stats count the pairs of
// those batches only: the ones read after the last batch are not written.
func (db *DB) Load(ctx context.Context, r io.Reader, opts *LoadOptions) (st DumpStats, err error) {
	start := time.Now()
	var written DumpStats // the pairs of the batches written so far
	defer func() {
		if err != nil {
			st = written
		}
	}()
	var o LoadOptions
	if opts != nil {
		o = *opts
	}
	if o.BatchBytes <= 0 {
		o.BatchBytes = DefaultLoadBatchBytes
	}
	br := bufio.NewReaderSize(r, 1<<20)
	hdr := make([]byte, len(dumpHeader))
	n, err := io.ReadFull(br, hdr)
	switch {
	case err == io.EOF:
		return st, fmt.Errorf("%w: the input is empty", ErrBadDump)
	case err != nil && err != io.ErrUnexpectedEOF:
		return st, fmt.Errorf("caskade: read the dump: %w", err)
	case string(hdr[:n]) != dumpHeader:
		return st, fmt.Errorf("%w: not a caskade dump (it begins %q)", ErrBadDump, hdr[:n])
	}
	now := db.nowMs()
	var b Batch
	pending := 0
	flush := func() error {
		if err := db.Write(&b); err != nil {
			return err
		}
		b.Reset()
		pending = 0
		written = st
		if o.Progress != nil {
			o.Progress(st)
		}
		return ctx.Err()
	}
	var body []byte
	off := int64(len(dumpHeader)) // where the current frame starts
	read := 0                     // pair frames read
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s at byte %d", ErrBadDump, fmt.Sprintf(format, args...), off)
	}
	// badRead is bad for a read that failed because the stream ended or
	// is malformed; a failed read of r (an I/O error, a cancelled ctx)
	// is reported as what it is.
	badRead := func(err error, format string, args ...any) error {
		if err == nil || err == io.EOF || err == io.ErrUnexpectedEOF || errors.Is(err, ErrBadDump) {
			return bad(format, args...)
		}
		return fmt.Errorf("caskade: read the dump at byte %d: %w", off, err)
	}
	for {
		kind, err := br.ReadByte()
		if err != nil {
			return st, badRead(err, "stream ends without its end frame after %d pairs", read)
		}
		var crc [4]byte
		if _, err := io.ReadFull(br, crc[:]); err != nil {
			return st, badRead(err, "cut inside a frame")
		}
		want := binary.LittleEndian.Uint32(crc[:])
		switch kind {
		case 'e':
			n, body, err := readUvarint(br, body[:0])
			if err != nil || crc32.Checksum(body, castagnoli) != want || n != uint64(read) {
				return st, badRead(err, "bad end frame (%d pairs read)", read)
			}
			// Whatever follows the end frame (a second dump appended,
			// say) would be dropped without a word.
			off += int64(1 + len(crc) + len(body))
			if _, err := br.ReadByte(); err != io.EOF {
				if err != nil {
					return st, fmt.Errorf("caskade: read the dump: %w", err)
				}
				return st, bad("data after the end frame")
			}
			if err := flush(); err != nil {
				return st, err
			}
			if err := db.Sync(); err != nil {
				return st, err
			}
			st.Duration = time.Since(start)
			return st, nil
		case 'p':
		default:
			return st, bad("unknown frame kind %#x after %d pairs", kind, read)
		}
		var klen, vlen, exp, flags uint64
		body = body[:0]
		if klen, body, err = readUvarint(br, body); err == nil {
			if vlen, body, err = readUvarint(br, body); err == nil {
				if exp, body, err = readUvarint(br, body); err == nil {
					flags, body, err = readUvarint(br, body)
				}
			}
		}
		if err != nil || klen > uint64(db.opts.MaxKeySize) || vlen > uint64(db.opts.MaxValueSize) || flags > 1<<32-1 {
			return st, badRead(err, "bad pair header after %d pairs", read)
		}
		n := len(body)
		body = append(body, make([]byte, klen+vlen)...)
		if _, err := io.ReadFull(br, body[n:]); err != nil {
			return st, badRead(err, "cut inside a pair")
		}
		if crc32.Checksum(body, castagnoli) != want {
			return st, bad("checksum mismatch in pair %d", read+1)
		}
		off += int64(1 + len(crc) + len(body))
		key, val := body[n:n+int(klen)], body[n+int(klen):]
		read++
		if exp != 0 && int64(exp) <= now {
			st.Expired++
			continue
		}
		if pending > 0 && pending+len(key)+len(val) > o.BatchBytes {
			// Write what is pending first: a large pair on top of an
			// almost full batch could pass MaxBatchSize.
			if err := flush(); err != nil {
				return st, err
			}
		}
		st.Pairs++
		st.Bytes += int64(len(key) + len(val))
		var t time.Time
		if exp != 0 {
			t = time.UnixMilli(int64(exp))
		}
		b.SetEntry(key, val, SetOptions{ExpiresAt: t, Flags: uint32(flags)})
		pending += len(key) + len(val)
		if pending >= o.BatchBytes {
			if err := flush(); err != nil {
				return st, err
			}
		}
	}
}

// readUvarint reads a uvarint and appends its bytes to body.
func readUvarint(br *bufio.Reader, body []byte) (uint64, []byte, error) {
	start := len(body)
	for i := 0; i < binary.MaxVarintLen64; i++ {
		c, err := br.ReadByte()
		if err != nil {
			return 0, body, err
		}
		body = append(body, c)
		if c < 0x80 {
			v, n := binary.Uvarint(body[start:])
			if n <= 0 {
				return 0, body, ErrBadDump
			}
			return v, body, nil
		}
	}
	return 0, body, ErrBadDump
}
