// Package storerr tells the Redis and memcached front ends which database
// errors come from the server's storage, and describes those without the
// file paths and system details they carry: a client gets a stable text
// that says what happened, and the server's log gets the cause.
package storerr

import (
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/caskade/caskade"
)

// Kind is what a storage error means to a client.
type Kind int

const (
	// Other is an error that is not about storage; its text is fit for a
	// client (a key too large, a conflict, ...).
	Other Kind = iota
	// WritesStopped is caskade.ErrWritesStopped: a write or fsync failed,
	// and the database takes no write until it is reopened. The database
	// has logged the cause.
	WritesStopped
	// NoSpace is a write refused whole for lack of space (ENOSPC); the
	// database takes writes again once there is room.
	NoSpace
	// IO is any other failed file operation or damaged data.
	IO
)

// Classify returns the kind of err.
func Classify(err error) Kind {
	switch {
	case err == nil:
		return Other
	case errors.Is(err, caskade.ErrWritesStopped):
		return WritesStopped
	case errors.Is(err, syscall.ENOSPC):
		return NoSpace
	}
	var (
		pe *fs.PathError
		le *os.LinkError
		se *os.SyscallError
		ce *caskade.CorruptionError
	)
	if errors.As(err, &pe) || errors.As(err, &le) || errors.As(err, &se) || errors.As(err, &ce) {
		return IO
	}
	return Other
}

// Reason is the system's description of err's cause as C's strerror
// words it ("No space left on device", "Input/output error"), which names
// no file; or "I/O error" when no system error number is behind err.
func Reason(err error) string {
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		return "I/O error"
	}
	s := errno.Error()
	if s != "" && 'a' <= s[0] && s[0] <= 'z' {
		s = string(s[0]-'a'+'A') + s[1:]
	}
	return s
}

// Reporter logs the causes of the storage errors a front end replied
// without them. Refusals for lack of space come in bursts (every write
// fails while the disk is full), so it logs one of them a second at most,
// with the count of those it left out; other I/O errors are logged each.
// Writes stopped are not logged: the database logged their cause once.
// The zero Reporter is ready; it is safe for concurrent use.
type Reporter struct {
	mu      sync.Mutex
	last    time.Time // when a NoSpace refusal was last logged
	skipped int       // NoSpace refusals not logged since
}

// Report logs err (of kind k, from Classify) on log, naming the front end
// as prefix ("redis", "memcache").
func (r *Reporter) Report(log *slog.Logger, prefix string, k Kind, err error) {
	switch k {
	case NoSpace:
		now := time.Now()
		r.mu.Lock()
		if !r.last.IsZero() && now.Sub(r.last) < time.Second {
			r.skipped++
			r.mu.Unlock()
			return
		}
		skipped := r.skipped
		r.last, r.skipped = now, 0
		r.mu.Unlock()
		log.Warn(prefix+": write refused: the disk is full", "err", err, "refused_since_last_logged", skipped)
	case IO:
		log.Error(prefix+": storage error", "err", err)
	}
}
