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

// TestUpdate checks that Update changes what its function sets, keeps the
// rest, and publishes nothing before the function returns.
func TestUpdate(t *testing.T) {
	for _, tc := range []struct {
		name     string
		change   func(pw *string, prot *bool)
		wantPW   string
		wantProt bool
	}{
		{"both", func(pw *string, prot *bool) { *pw, *prot = "b", false }, "b", false},
		{"password", func(pw *string, prot *bool) { *pw = "b" }, "b", true},
		{"protected mode", func(pw *string, prot *bool) { *prot = false }, "a", false},
		{"nothing", func(pw *string, prot *bool) {}, "a", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := New("a", true)
			s.Update(func(pw *string, prot *bool) {
				if *pw != "a" || !*prot {
					t.Errorf("change got %q %v, want the settings a true", *pw, *prot)
				}
				tc.change(pw, prot)
				if gpw, gprot := s.Get(); gpw != "a" || !gprot {
					t.Errorf("seen before Update returned: %q %v", gpw, gprot)
				}
			})
			if pw, prot := s.Get(); pw != tc.wantPW || prot != tc.wantProt {
				t.Fatalf("after Update: %q %v, want %q %v", pw, prot, tc.wantPW, tc.wantProt)
			}
		})
	}
}
