package netloop

import (
	"errors"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
)

// Pool is a server's set of event loops, started at the first Pick, over
// which connections are spread in turn. Set its fields before first use.
type Pool struct {
	// N is the number of loops: 0 means one per processor (GOMAXPROCS),
	// and a negative number none (every connection has a goroutine).
	N int
	// Options, if not nil, returns the options of loop i.
	Options func(i int) Options
	// OnError, if not nil, is told why a loop could not start (not where
	// event loops do not exist).
	OnError func(error)

	once  sync.Once
	loops []*Loop
	next  atomic.Uint64
}

// Wrap prepares nc for a loop of the pool: nil if the pool has no loops
// or nc cannot be polled, and nc is then to have a goroutine.
func (p *Pool) Wrap(nc net.Conn) *Conn {
	if p.N < 0 {
		return nil
	}
	c, err := Wrap(nc)
	if err != nil {
		return nil
	}
	return c
}

// Pick returns the next loop in turn and its index, starting the loops
// at the first call; ok is false if there are none.
func (p *Pool) Pick() (l *Loop, i int, ok bool) {
	p.once.Do(p.start)
	if len(p.loops) == 0 {
		return nil, 0, false
	}
	i = int(p.next.Add(1) % uint64(len(p.loops)))
	return p.loops[i], i, true
}

func (p *Pool) start() {
	n := p.N
	if n == 0 {
		n = runtime.GOMAXPROCS(0)
	}
	for i := range n {
		var opts Options
		if p.Options != nil {
			opts = p.Options(i)
		}
		l, err := New(opts)
		if err != nil {
			if p.OnError != nil && !errors.Is(err, ErrUnsupported) {
				p.OnError(err)
			}
			return
		}
		p.loops = append(p.loops, l)
	}
}

// Close stops the loops; none start after it. Close the connections on
// them first.
func (p *Pool) Close() {
	p.once.Do(func() {})
	for _, l := range p.loops {
		l.Close()
	}
}
