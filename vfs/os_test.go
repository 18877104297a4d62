package vfs_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/caskade/caskade/vfs"
)

const lockHelperEnv = "CASKADE_VFS_LOCK_HELPER"

// TestLockHelperProcess is not a test: TestOSLockAcrossProcesses runs the
// test binary with it to hold a lock in another process. It takes the lock
// named by the environment, says "locked", and holds the lock until its
// standard input closes.
func TestLockHelperProcess(t *testing.T) {
	name := os.Getenv(lockHelperEnv)
	if name == "" {
		t.Skip("helper process for TestOSLockAcrossProcesses")
	}
	l, err := vfs.OS().Lock(name)
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println("locked")
	io.Copy(io.Discard, os.Stdin)
	l.Close()
	os.Exit(0)
}

func TestOSLockAcrossProcesses(t *testing.T) {
	probe, err := vfs.OS().Lock(filepath.Join(t.TempDir(), "probe"))
	if errors.Is(err, vfs.ErrUnsupported) {
		t.Skip("no flock on this system")
	}
	ok(t, err)
	ok(t, probe.Close())
	tests := []struct {
		name string
		end  func(cmd *exec.Cmd, stdin io.Closer) error // how the holder goes away
	}{
		{"holder unlocks and exits", func(cmd *exec.Cmd, stdin io.Closer) error { return stdin.Close() }},
		{"holder is killed", func(cmd *exec.Cmd, stdin io.Closer) error { return cmd.Process.Kill() }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := filepath.Join(t.TempDir(), "LOCK")
			cmd := exec.Command(os.Args[0], "-test.run=^TestLockHelperProcess$")
			cmd.Env = append(os.Environ(), lockHelperEnv+"="+name)
			stdin, err := cmd.StdinPipe()
			ok(t, err)
			stdout, err := cmd.StdoutPipe()
			ok(t, err)
			cmd.Stderr = os.Stderr
			ok(t, cmd.Start())
			t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })

			line, err := bufio.NewReader(stdout).ReadString('\n')
			if err != nil || line != "locked\n" {
				t.Fatalf("helper said %q, %v", line, err)
			}
			if l, err := vfs.OS().Lock(name); !errors.Is(err, vfs.ErrLocked) {
				if l != nil {
					l.Close()
				}
				t.Fatalf("Lock while another process holds it: %v, want ErrLocked", err)
			}

			ok(t, tt.end(cmd, stdin))
			cmd.Wait() // the lock dies with the process

			l, err := vfs.OS().Lock(name)
			if err != nil {
				t.Fatalf("Lock after the holder went away: %v", err)
			}
			ok(t, l.Close())
		})
	}
}
