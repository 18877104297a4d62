package main

import (
	"io"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// isTerminal reports whether w is a terminal: an *os.File the terminal
// ioctl works on (other character devices, such as /dev/null or /dev/full,
// are not terminals).
func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	if !ok || f == nil {
		return false
	}
	return term.IsTerminal(int(f.Fd()))
}

// progress is a progress bar on stderr, or nothing when stderr is not a
// terminal (every method of a nil or hidden progress does nothing). It is
// safe for concurrent use.
type progress struct {
	bar      *progressbar.ProgressBar
	mu       sync.Mutex
	known    bool  // the bar has a length; otherwise it is a spinner
	finished bool  // done was called
	at       int64 // the count last set (the bar's own moves to its end on done)
}

// newProgress returns a bar counting to max, or a spinner if max <= 0,
// writing to w if show is set. The bar shows its count in bytes, out of
// the total, and the rate, if bytes is set; as a number if count is set.
func newProgress(w io.Writer, show bool, max int64, desc string, bytes, count bool) *progress {
	if !show {
		return &progress{}
	}
	if max <= 0 {
		max = -1
	}
	opts := []progressbar.Option{
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(65 * time.Millisecond),
		progressbar.OptionShowElapsedTimeOnFinish(),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionSetRenderBlankState(true),
	}
	switch {
	case bytes:
		// Bytes done of the total ("12 MB/188 MB"), and the rate.
		opts = append(opts, progressbar.OptionShowBytes(true), progressbar.OptionShowCount())
	case count:
		opts = append(opts, progressbar.OptionShowCount())
	}
	return &progress{bar: progressbar.NewOptions64(max, opts...), known: max > 0}
}

// set moves the bar to n, clamped to its maximum.
func (p *progress) set(n int64) {
	if p == nil || p.bar == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.known {
		n = min(n, p.bar.GetMax64())
	}
	p.at = n
	p.bar.Set64(n)
}

// setMax changes the bar's maximum.
func (p *progress) setMax(n int64) {
	if p == nil || p.bar == nil || n <= 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.bar.ChangeMax64(n)
	p.known = true
}

// done clears the bar from the terminal.
func (p *progress) done() {
	if p == nil || p.bar == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.finished = true
	p.bar.Finish()
}

// visible reports whether the bar is shown.
func (p *progress) visible() bool { return p != nil && p.bar != nil }

// pairCounter passes a dump stream through to w and counts its pair
// frames as they go by (see the dump format in the caskade package), calling
// onPairs with the running count after each Write that completed a pair.
type pairCounter struct {
	w       io.Writer
	onPairs func(int64)
	pairs   int64

	header bool   // the header line has been passed
	skip   uint64 // bytes still to pass without looking (CRC, key, value)
	inVars bool   // reading a frame's uvarints
	kind   byte   // of the current frame
	nvars  int    // uvarints the frame has
	vi     int    // uvarints read so far
	cur    uint64 // the uvarint being read
	shift  uint
	kv     uint64 // key plus value length of the current pair
}

func (c *pairCounter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	before := c.pairs
	c.scan(p[:n])
	if c.pairs != before && c.onPairs != nil {
		c.onPairs(c.pairs)
	}
	return n, err
}

func (c *pairCounter) scan(p []byte) {
	for len(p) > 0 {
		switch {
		case !c.header:
			i := 0
			for i < len(p) && p[i] != '\n' {
				i++
			}
			if i < len(p) {
				c.header = true
				i++
			}
			p = p[i:]
		case c.skip > 0:
			k := min(c.skip, uint64(len(p)))
			p = p[k:]
			c.skip -= k
		case !c.inVars:
			c.kind = p[0]
			p = p[1:]
			c.skip = 4 // the CRC
			c.inVars, c.vi, c.cur, c.shift, c.kv = true, 0, 0, 0, 0
			c.nvars = 1 // the end frame's pair count
			if c.kind == 'p' {
				c.nvars = 4 // key length, value length, expiry, flags
			}
		default:
			b := p[0]
			p = p[1:]
			c.cur |= uint64(b&0x7f) << c.shift
			c.shift += 7
			if b >= 0x80 {
				continue
			}
			if c.kind == 'p' && c.vi < 2 {
				c.kv += c.cur
			}
			c.vi++
			c.cur, c.shift = 0, 0
			if c.vi == c.nvars {
				c.inVars = false
				if c.kind == 'p' {
					c.pairs++
					c.skip = c.kv
				}
			}
		}
	}
}
