package access

import (
	"sync"
	"testing"
)

func TestSettings(t *testing.T) {
	var zero Settings
	if pw, prot := zero.Get(); pw != "" || !prot || !zero.Refuses() {
		t.Fatalf("zero value: %q %v refuses %v; want no password, protected", pw, prot, zero.Refuses())
	}
	s := New("pw", false)
	if pw, prot := s.Get(); pw != "pw" || prot || s.Refuses() {
		t.Fatalf("New(pw, false): %q %v", pw, prot)
	}
	s.SetPassword("")
	if s.Refuses() {
		t.Fatal("protected mode off refuses")
	}
	s.SetProtectedMode(true)
	if !s.Refuses() || s.Password() != "" || !s.ProtectedMode() {
		t.Fatal("protected mode on without a password does not refuse")
	}
	// Concurrent changes of the two settings lose neither.
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); s.SetPassword("x") }()
	go func() { defer wg.Done(); s.SetProtectedMode(false) }()
	wg.Wait()
	if pw, prot := s.Get(); pw != "x" || prot {
		t.Fatalf("after concurrent sets: %q %v", pw, prot)
	}
}
