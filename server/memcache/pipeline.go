package memcache

import (
	"bytes"

	"github.com/caskade/caskade"
)

// Limits of one run of deferred sets.
const (
	maxDeferredSets  = 256
	maxDeferredBytes = 1 << 20
)

// pendingSets are plain sets (text "set", no cas) a TCP connection has
// received while more commands were already buffered behind them. They are
// committed together, each atomically and on its own, as one group commit
// (caskade.DB.WriteBatches), and their replies are written then, in order:
// under --sync always, a pipeline of sets then costs one fsync instead of
// one each. A run ends before any other command (so the connection reads
// its own writes and replies stay in order), whenever replies are flushed,
// and at maxDeferredSets or maxDeferredBytes.
type pendingSets struct {
	batches []*caskade.Batch
	noreply []bool
	n       int
	bytes   int
}

// isSetLine reports whether a command line is a text protocol set, which
// may join a run of deferred sets rather than end it.
func isSetLine(line []byte) bool { return bytes.HasPrefix(line, []byte("set ")) }

// deferSet adds the plain set req to the run.
func (ss *session) deferSet(req *storeReq) {
	p := &ss.pend
	if p.n == len(p.batches) {
		p.batches = append(p.batches, new(caskade.Batch))
		p.noreply = append(p.noreply, false)
	}
	p.batches[p.n].SetEntry(req.key, req.data, caskade.SetOptions{ExpiresAt: req.exp, Flags: req.flags})
	p.noreply[p.n] = ss.noreply
	p.n++
	p.bytes += len(req.key) + len(req.data)
	if p.n >= maxDeferredSets || p.bytes >= maxDeferredBytes {
		ss.commitPending()
	}
}

// commitPending commits the run of deferred sets, if any, and appends
// their replies.
func (ss *session) commitPending() {
	p := &ss.pend
	if p.n == 0 {
		return
	}
	var errs []error
	if p.n == 1 {
		errs = []error{ss.s.DB.Write(p.batches[0])}
	} else {
		errs = ss.s.DB.WriteBatches(p.batches[:p.n])
	}
	for i, err := range errs {
		if err != nil {
			ss.s.log.Warn("memcache: store failed", "err", err)
			if !p.noreply[i] {
				ss.out = append(append(ss.out, serverError(err)...), "\r\n"...)
			}
			continue
		}
		ss.count.add(statTotalItems, 1)
		if !p.noreply[i] {
			ss.out = append(ss.out, "STORED\r\n"...)
		}
	}
	for i := range p.n {
		if p.batches[i].Len() > 1 || p.bytes > maxDeferredBytes/4 {
			p.batches[i] = new(caskade.Batch) // do not keep large buffers
		} else {
			p.batches[i].Reset()
		}
	}
	p.n, p.bytes = 0, 0
}
