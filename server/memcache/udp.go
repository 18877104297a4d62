package memcache

import (
	"encoding/binary"
	"errors"
	"net"
	"sync"
	"time"
)

// udpHeaderLen is the size of the frame header of every datagram: request
// id, sequence number, total datagrams, reserved (big-endian uint16s).
const udpHeaderLen = 8

// udpFrame is a decoded request datagram header.
type udpFrame struct {
	requestID uint16
	sequence  uint16
	total     uint16
	reserved  uint16
}

// decodeUDPFrame splits a request datagram into its header and payload.
// Like memcached it accepts only single-datagram requests (total 1) with
// at least one byte of payload; sequence and reserved are not checked.
func decodeUDPFrame(d []byte) (udpFrame, []byte, bool) {
	if len(d) <= udpHeaderLen {
		return udpFrame{}, nil, false
	}
	f := udpFrame{
		requestID: binary.BigEndian.Uint16(d[0:]),
		sequence:  binary.BigEndian.Uint16(d[2:]),
		total:     binary.BigEndian.Uint16(d[4:]),
		reserved:  binary.BigEndian.Uint16(d[6:]),
	}
	if f.total != 1 {
		return f, nil, false
	}
	return f, d[udpHeaderLen:], true
}

// udpDataLen is the reply bytes carried by each datagram.
const udpDataLen = MaxUDPPayload - udpHeaderLen

// encodeUDPReply splits a reply into datagrams of at most MaxUDPPayload
// bytes, each with the request id, its sequence number and the total. A
// reply needing more than 65535 datagrams is replaced by a SERVER_ERROR.
// An empty reply (noreply) sends nothing.
func encodeUDPReply(requestID uint16, reply []byte) [][]byte {
	if len(reply) == 0 {
		return nil
	}
	total := (len(reply) + udpDataLen - 1) / udpDataLen
	if total > 0xffff {
		reply = []byte(errTooLarge + "\r\n")
		total = 1
	}
	out := make([][]byte, 0, total)
	for seq := 0; seq < total; seq++ {
		chunk := reply[seq*udpDataLen : min(len(reply), (seq+1)*udpDataLen)]
		d := make([]byte, udpHeaderLen+len(chunk))
		binary.BigEndian.PutUint16(d[0:], requestID)
		binary.BigEndian.PutUint16(d[2:], uint16(seq))
		binary.BigEndian.PutUint16(d[4:], uint16(total))
		copy(d[udpHeaderLen:], chunk)
		out = append(out, d)
	}
	return out
}

// ServeUDP serves memcached requests arriving as datagrams on pc until
// Shutdown or Close, then returns ErrServerClosed; it closes pc when it
// returns. Each datagram must hold a whole request (one or more commands
// with their data) after its 8-byte frame header. As memcached does, each
// reply (each command's, and each item of a multi-get, END going with the
// last) is sent back to the source as its own message under the request's
// id, split into datagrams of at most MaxUDPPayload bytes numbered
// 0..total-1. Malformed datagrams (shorter than 9 bytes, or
// claiming more than one datagram) are dropped, as memcached drops them.
// In protected mode datagrams from non-loopback sources are dropped.
// ServeUDP returns ErrUDPWithPassword if Password is set, and drops every
// datagram while a password set later through Access is.
func (s *Server) ServeUDP(pc net.PacketConn) error {
	if err := s.Validate(); err != nil {
		pc.Close()
		return err
	}
	s.init()
	if s.access.Password() != "" {
		pc.Close()
		return ErrUDPWithPassword
	}
	s.mu.Lock()
	if s.closing.Load() {
		s.mu.Unlock()
		pc.Close()
		return ErrServerClosed
	}
	s.packets[pc] = struct{}{}
	s.mu.Unlock()
	if a, ok := pc.LocalAddr().(*net.UDPAddr); ok {
		s.udpPort.Store(int32(a.Port))
	}
	errs := make(chan error, s.udpWorkers)
	var wg sync.WaitGroup
	for range s.udpWorkers {
		w := &udpWorker{s: s, pc: pc, buf: make([]byte, MaxUDPRequest)}
		w.sess.init(s, &reader{}, true)
		s.mu.Lock()
		s.udpCounters = append(s.udpCounters, &w.sess.count)
		s.mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- w.run()
		}()
	}
	wg.Wait()
	pc.Close()
	s.mu.Lock()
	delete(s.packets, pc)
	s.mu.Unlock()
	close(errs)
	if s.closing.Load() {
		return ErrServerClosed
	}
	for err := range errs {
		if err != nil {
			return err
		}
	}
	return ErrServerClosed
}

// udpWorker reads and answers datagrams.
type udpWorker struct {
	s    *Server
	pc   net.PacketConn
	buf  []byte
	sess session
}

func (w *udpWorker) run() error {
	s := w.s
	for {
		n, addr, err := w.pc.ReadFrom(w.buf)
		if err != nil {
			if s.closing.Load() || errors.Is(err, net.ErrClosed) {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			w.pc.Close()
			return err
		}
		w.sess.count.add(statBytesRead, uint64(n))
		// UDP cannot authenticate: while a password is set (one set
		// after ServeUDP started, through shared Access), nothing is
		// served.
		if pw, protected := s.access.Get(); pw != "" || protected && !isLoopback(addr) {
			w.sess.count.add(statUDPDropped, 1)
			continue
		}
		for _, d := range w.handle(w.buf[:n]) {
			if m, err := w.pc.WriteTo(d, addr); err == nil {
				w.sess.count.add(statBytesWritten, uint64(m))
			}
		}
	}
}

// handle answers one datagram, returning the reply datagrams.
func (w *udpWorker) handle(d []byte) (replies [][]byte) {
	f, payload, ok := decodeUDPFrame(d)
	if !ok {
		w.sess.count.add(statUDPDropped, 1)
		return nil
	}
	ss := &w.sess
	ss.out, ss.marks = ss.out[:0], ss.marks[:0]
	ss.ended = time.Time{} // a datagram's first command starts now
	ss.r.reset(payload)
	defer func() {
		if p := recover(); p != nil {
			w.s.log.Error("memcache: panic serving datagram", "panic", p)
			replies = nil
		}
	}()
	for ss.r.buffered() > 0 {
		err := ss.step()
		ss.mark()
		if err != nil {
			break
		}
	}
	ss.mark()
	start := 0
	for _, end := range ss.marks {
		replies = append(replies, encodeUDPReply(f.requestID, ss.out[start:end])...)
		start = end
	}
	if cap(ss.out) > maxRetainedOutput {
		ss.out = nil
	}
	return replies
}
