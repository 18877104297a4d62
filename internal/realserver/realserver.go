// Package realserver starts the real servers caskade is compared with in
// tests (redis-server, memcached): each on a unix socket in a temporary
// directory, stopped when the test ends.
package realserver

import (
	"bytes"
	"net"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// Start runs the program bin with args, where "{sock}" and "{dir}" stand
// for a unix socket path and the temporary directory it is in, and returns
// the socket's path once the program accepts connections on it. It skips
// the test if bin is not installed, and fails it if bin exits or does not
// listen within ten seconds.
func Start(t testing.TB, bin string, args ...string) string {
	t.Helper()
	path, err := exec.LookPath(bin)
	if err != nil {
		t.Skipf("%s is not installed", bin)
	}
	dir := t.TempDir()
	sock := filepath.Join(dir, "server.sock")
	for i, a := range args {
		switch a {
		case "{sock}":
			args[i] = sock
		case "{dir}":
			args[i] = dir
		}
	}
	cmd := exec.Command(path, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-exited })
	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case <-exited:
			t.Fatalf("%s exited: %s", bin, out.String())
		default:
		}
		if c, err := net.Dial("unix", sock); err == nil {
			c.Close()
			return sock
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s does not listen on %s: %s", bin, sock, out.String())
		}
		time.Sleep(time.Millisecond) // polling for the socket: there is no signal to wait on
	}
}
