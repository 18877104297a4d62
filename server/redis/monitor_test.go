package redis

import (
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caskade/caskade"
	"github.com/caskade/caskade/vfs"
	"github.com/caskade/caskade/vfs/errorfs"
)

// monitorLineRE matches the head of a MONITOR line: its time and the
// database and address of the client that sent the command.
var monitorLineRE = regexp.MustCompile(`^\+\d+\.\d{6} \[(\d+) [^\]]*\] `)

// TestDifferentialMonitor sends the same commands to caskade and to a
// real redis-server from a plain client, from the MONITOR client itself
// and from a second monitor, and compares what the first monitor receives
// (its own replies and the lines), with the times and client addresses
// left out. Each step ends with an ECHO from the client that sent it, so
// that the stream is read up to a known point.
func TestDifferentialMonitor(t *testing.T) {
	sock, ts, _ := diffSetup(t)
	type step struct {
		who  string // "c": a plain client, "m": the monitor read, "m2": another monitor
		n    int    // commands
		cmds string // encoded
	}
	var steps []step
	for _, st := range []struct {
		who  string
		cmds [][]string
	}{
		{"c", [][]string{{"SET", "k", "a\x00b\xff\"\\\n\r\t\a\b c\x7f~ "}}},
		{"c", [][]string{{"ECHO", ""}}},
		{"c", [][]string{{"SELECT", "2"}}},
		{"c", [][]string{{"SET", "k", "v"}}},
		{"c", [][]string{{"SELECT", "0"}}},
		{"c", [][]string{{"MULTI"}, {"SET", "a", "1"}, {"INCR", "a"}, {"EXEC"}}},
		{"c", [][]string{{"MULTI"}, {"SET", "a"}, {"EXEC"}}},
		{"c", [][]string{{"WATCH", "a"}, {"SET", "a", "2"}, {"MULTI"}, {"GET", "a"}, {"EXEC"}}},
		{"c", [][]string{{"NOPE", "x"}}}, {"c", [][]string{{"GET"}}}, {"c", [][]string{{"INCR", "k"}}},
		{"c", [][]string{{"AUTH", "pw"}}}, {"c", [][]string{{"AUTH", "u", "pw"}}},
		{"c", [][]string{{"HELLO", "2", "AUTH", "default", "pw", "SETNAME", "nm"}}},
		{"c", [][]string{{"HELLO", "2", "SETNAME", "nm"}}},
		{"c", [][]string{{"CONFIG", "GET", "maxclients"}}},
		// The monitor's own commands: its reply, then its line.
		{"m", [][]string{{"PING"}}}, {"m", [][]string{{"GET", "k"}}}, {"m", [][]string{{"ECHO", "from m"}}},
		// Another monitor's.
		{"m2", [][]string{{"PING"}}}, {"m2", [][]string{{"ECHO", "from m2"}}},
		{"m2", [][]string{{"RESET"}}}, {"m2", [][]string{{"GET", "k"}}},
	} {
		enc := ""
		for _, c := range st.cmds {
			enc += cmd(c...)
		}
		steps = append(steps, step{st.who, len(st.cmds), enc})
	}
	run := func(network, addr string) []string {
		m := dialDiff(t, network, addr)
		m2 := dialDiff(t, network, addr)
		c := dialDiff(t, network, addr)
		for _, d := range []*diffConn{m, m2} {
			if r, err := d.roundTrip([]string{"MONITOR"}); err != nil || string(r) != "+OK\r\n" {
				t.Fatalf("MONITOR: %q %v", r, err)
			}
		}
		// m2's stream is not read: it is small.
		conns := map[string]*diffConn{"c": c, "m": m, "m2": m2}
		var got []string
		for i, st := range steps {
			sentinel := fmt.Sprintf("sentinel-%d", i)
			d := conns[st.who]
			d.nc.SetDeadline(time.Now().Add(10 * time.Second))
			if _, err := io.WriteString(d.nc, st.cmds+cmd("ECHO", sentinel)); err != nil {
				t.Fatal(err)
			}
			if st.who == "c" {
				for range st.n + 1 {
					if _, err := readRawReply(c.br, nil); err != nil {
						t.Fatal(err)
					}
				}
			}
			m.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
			for {
				line, err := m.br.ReadString('\n')
				if err != nil {
					t.Fatalf("%s after %q: %v (read %q)", network, st.cmds, err, got)
				}
				if strings.HasPrefix(line, "+") && strings.HasSuffix(line, `"ECHO" "`+sentinel+"\"\r\n") {
					break
				}
				got = append(got, monitorLineRE.ReplaceAllString(line, "+<time> [$1 <addr>] "))
			}
		}
		return got
	}
	theirs := run("unix", sock)
	ours := run("tcp", ts.addr)
	if strings.Join(ours, "") != strings.Join(theirs, "") {
		t.Fatalf("MONITOR saw\n%s\nredis-server's saw\n%s", strings.Join(ours, ""), strings.Join(theirs, ""))
	}
}

// TestMonitorSeesMonitors checks without redis-server what
// TestDifferentialMonitor compares with it: a monitor sees its own
// commands (after their replies) and those of other monitors, with the
// sender's address, as Redis does; they were left out.
func TestMonitorSeesMonitors(t *testing.T) {
	ts := startServer(t, nil)
	m, m2 := ts.dial(), ts.dial()
	m.do(cmd("MONITOR"), "+OK\r\n")
	m2.do(cmd("MONITOR"), "+OK\r\n")
	line := func(c *rawConn, want string) {
		t.Helper()
		got := c.readLine()
		if !monitorLineRE.MatchString(got) {
			t.Fatalf("MONITOR line %q is not in Redis's format", got)
		}
		if !strings.HasSuffix(got, want+"\r\n") {
			t.Fatalf("MONITOR line %q, want one ending %s", got, want)
		}
	}
	c := ts.dial()
	// Each step ends with a plain client's ECHO, whose line must come
	// after those of the step.
	m.do(cmd("PING"), "+PONG\r\n")
	c.do(cmd("ECHO", "1"), "$1\r\n1\r\n")
	line(m, fmt.Sprintf(`[0 %s] "PING"`, m.nc.LocalAddr()))
	line(m, `"ECHO" "1"`)
	line(m2, fmt.Sprintf(`[0 %s] "PING"`, m.nc.LocalAddr()))
	line(m2, `"ECHO" "1"`)
	m2.do(cmd("ECHO", "x\xff"), "$2\r\nx\xff\r\n")
	c.do(cmd("ECHO", "2"), "$1\r\n2\r\n")
	line(m2, fmt.Sprintf(`[0 %s] "ECHO" "x\xff"`, m2.nc.LocalAddr()))
	line(m2, `"ECHO" "2"`)
	line(m, fmt.Sprintf(`[0 %s] "ECHO" "x\xff"`, m2.nc.LocalAddr()))
	line(m, `"ECHO" "2"`)
	// A command a monitor may not run is not shown.
	m.do(cmd("GET", "k"), "-ERR Replica can't interact with the keyspace\r\n")
	c.do(cmd("ECHO", "3"), "$1\r\n3\r\n")
	line(m, `"ECHO" "3"`)
}

// TestMonitorExecRetry checks that MONITOR shows the commands of an EXEC
// once, as they took effect: an EXEC whose commit conflicted with a write
// of a key it read runs them again, and each attempt fed them to the
// monitors, so that they saw an INCR twice for one increment.
func TestMonitorExecRetry(t *testing.T) {
	var db atomic.Pointer[caskade.DB]
	// Set before the server starts, so that its goroutines see it; a
	// write into the key the transaction read makes its first commit
	// conflict.
	testHookExecAttempt = func(attempt int) {
		if attempt == 0 {
			if err := db.Load().Set([]byte("n"), []byte("10")); err != nil {
				t.Error(err)
			}
		}
	}
	t.Cleanup(func() { testHookExecAttempt = nil }) // after the server's cleanup, registered next
	ts := startServer(t, nil)
	db.Store(ts.db)
	m, c := ts.dial(), ts.dial()
	m.do(cmd("MONITOR"), "+OK\r\n")
	c.do(cmd("MULTI"), "+OK\r\n")
	c.do(cmd("INCR", "n"), "+QUEUED\r\n")
	c.do(cmd("EXEC"), "*1\r\n:11\r\n")
	c.do(cmd("ECHO", "end"), "$3\r\nend\r\n")
	var got []string
	for {
		line := m.readLine()
		if !monitorLineRE.MatchString(line) {
			t.Fatalf("MONITOR line %q is not in Redis's format", line)
		}
		args := strings.TrimSuffix(monitorLineRE.ReplaceAllString(line, ""), "\r\n")
		if args == `"ECHO" "end"` {
			break
		}
		got = append(got, args)
	}
	if want := []string{`"MULTI"`, `"INCR" "n"`, `"EXEC"`}; !slices.Equal(got, want) {
		t.Fatalf("MONITOR saw %q, want %q", got, want)
	}
}

// TestMonitorTime checks that a MONITOR line carries the time its
// command ended, as Redis's replicationFeedMonitors reads the clock after
// the command ran, not the time it started: for a command, a command
// queued in MULTI and the EXEC that ran it. A read of the data file
// (each GET reads its value) notes the time inside the command and lets
// a microsecond pass, so a line stamped at the start is before it.
func TestMonitorTime(t *testing.T) {
	efs := errorfs.New(vfs.OS())
	db, err := caskade.Open(t.TempDir(), &caskade.Options{FS: efs, MergeInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ts := startServerOn(t, db)
	m, c := ts.dial(), ts.dial()
	c.do(cmd("SET", "k", "v"), "+OK\r\n")
	m.do(cmd("MONITOR"), "+OK\r\n")
	var inside atomic.Int64 // Unix µs of the first read of a step
	efs.InjectFunc(errorfs.OpRead, func(string) error {
		// Wait a microsecond at most, so that the command ends after now.
		now := time.Now().UnixMicro()
		for time.Now().UnixMicro() <= now {
		}
		inside.CompareAndSwap(0, now)
		return nil
	})
	t.Cleanup(func() { efs.InjectFunc(errorfs.OpRead, nil) })
	lineRE := regexp.MustCompile(`^\+(\d+)\.(\d{6}) \[\d+ [^\]]*\] (.*)\r\n$`)
	for _, step := range []struct {
		send, replies string
		lines         []string // the commands' lines
		after         []bool   // whether each ran the read: stamped after it
	}{
		{cmd("GET", "k"), "$1\r\nv\r\n", []string{`"GET" "k"`}, []bool{true}},
		{cmd("MULTI") + cmd("GET", "k") + cmd("EXEC"), "+OK\r\n+QUEUED\r\n*1\r\n$1\r\nv\r\n",
			[]string{`"MULTI"`, `"GET" "k"`, `"EXEC"`}, []bool{false, true, true}},
	} {
		inside.Store(0)
		c.do(step.send, step.replies)
		in := inside.Load()
		if in == 0 {
			t.Fatalf("%q read no data file: the test needs a read inside the command", step.send)
		}
		for i, want := range step.lines {
			line := m.readLine()
			sm := lineRE.FindStringSubmatch(line)
			if sm == nil || sm[3] != want {
				t.Fatalf("MONITOR line %q, want one for %s", line, want)
			}
			sec, _ := strconv.ParseInt(sm[1], 10, 64)
			us, _ := strconv.ParseInt(sm[2], 10, 64)
			if at := sec*1e6 + us; step.after[i] && at <= in {
				t.Errorf("%s: stamped %d µs, not after the read inside it at %d µs: the start, not the end", want, at, in)
			}
		}
	}
}
