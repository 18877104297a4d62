// Package access holds the access settings that the front ends of one
// server share: the password and protected mode. caskade serve gives its
// Redis, memcached and HTTP servers one Settings, so a change made at run
// time (Redis's CONFIG SET requirepass or protected-mode) applies to all
// three; Update changes both settings in one step, so that no front end
// sees one changed without the other.
package access

import "sync/atomic"

// Settings are a password and a protected-mode switch, read and changed
// atomically. The zero value has no password and protected mode on (only
// loopback clients are served). All methods are safe for concurrent use.
type Settings struct {
	v atomic.Pointer[values]
}

type values struct {
	password    string
	unprotected bool // so that the zero value is protected
}

// New returns settings with password (empty: none) and protected mode
// on or off.
func New(password string, protectedMode bool) *Settings {
	s := &Settings{}
	s.v.Store(&values{password: password, unprotected: !protectedMode})
	return s
}

func (s *Settings) load() values {
	if v := s.v.Load(); v != nil {
		return *v
	}
	return values{}
}

// Get returns the password (empty: none) and whether protected mode is
// on, as one consistent pair.
func (s *Settings) Get() (password string, protectedMode bool) {
	v := s.load()
	return v.password, !v.unprotected
}

// Password returns the password, or "" if none is set.
func (s *Settings) Password() string { return s.load().password }

// ProtectedMode reports whether protected mode is on.
func (s *Settings) ProtectedMode() bool { return !s.load().unprotected }

// Refuses reports whether protected mode refuses a client that is not on
// the loopback interface: protected mode is on and no password is set.
func (s *Settings) Refuses() bool {
	v := s.load()
	return !v.unprotected && v.password == ""
}

// SetPassword sets the password; "" removes it.
func (s *Settings) SetPassword(password string) {
	s.update(func(v *values) { v.password = password })
}

// SetProtectedMode turns protected mode on or off.
func (s *Settings) SetProtectedMode(on bool) {
	s.update(func(v *values) { v.unprotected = !on })
}

// Update changes the settings in one step: change gets the password and
// whether protected mode is on, and changes either or both; a reader sees
// the settings of before or after, never one changed and not the other.
// change may run more than once (when another change raced with it), so
// it must not have other effects, and must not block.
func (s *Settings) Update(change func(password *string, protectedMode *bool)) {
	s.update(func(v *values) {
		prot := !v.unprotected
		change(&v.password, &prot)
		v.unprotected = !prot
	})
}

func (s *Settings) update(change func(*values)) {
	for {
		old := s.v.Load()
		var nv values
		if old != nil {
			nv = *old
		}
		change(&nv)
		if s.v.CompareAndSwap(old, &nv) {
			return
		}
	}
}
