package httpapi

import (
	"fmt"
	"net/http"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"sort"
	"strconv"
	"strings"
	"time"
)

// maxProfileSeconds bounds CPU profiles and traces.
const maxProfileSeconds = 60

// servePprof serves the runtime profiles under /debug/pprof/ in the formats
// of net/http/pprof (which is not imported, because it registers itself on
// http.DefaultServeMux): the index, each named profile (?debug=N for text),
// profile (CPU, ?seconds=N) and trace (?seconds=N). writeTimeout is the
// server's (0: none): a profile or trace moves the response's write
// deadline to that long after it ends, since the write timeout, counted
// from the request, would otherwise cut off every profile that runs as
// long as it.
func servePprof(w http.ResponseWriter, r *http.Request, writeTimeout time.Duration) {
	name := strings.TrimPrefix(strings.TrimPrefix(r.URL.Path, "/debug/pprof"), "/")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	switch name {
	case "":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		profiles := pprof.Profiles()
		sort.Slice(profiles, func(i, j int) bool { return profiles[i].Name() < profiles[j].Name() })
		fmt.Fprintln(w, "profiles (append ?debug=1 for text):")
		for _, p := range profiles {
			fmt.Fprintf(w, "%6d %s\n", p.Count(), p.Name())
		}
		fmt.Fprintln(w, "     - profile (CPU, ?seconds=N)")
		fmt.Fprintln(w, "     - trace (execution trace, ?seconds=N)")
	case "profile", "trace":
		secs, err := strconv.Atoi(r.URL.Query().Get("seconds"))
		if err != nil || secs <= 0 {
			secs = 30
		}
		secs = min(secs, maxProfileSeconds)
		if writeTimeout > 0 {
			// Not supported when the handler runs under another server;
			// its deadlines are its own.
			_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(time.Duration(secs)*time.Second + writeTimeout))
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Disposition", `attachment; filename="`+name+`"`)
		var startErr error
		if name == "profile" {
			startErr = pprof.StartCPUProfile(w)
		} else {
			startErr = trace.Start(w)
		}
		if startErr != nil {
			w.Header().Del("Content-Disposition")
			writeError(w, http.StatusConflict, "profiling_busy", startErr.Error())
			return
		}
		select {
		case <-time.After(time.Duration(secs) * time.Second):
		case <-r.Context().Done():
		}
		if name == "profile" {
			pprof.StopCPUProfile()
		} else {
			trace.Stop()
		}
	default:
		p := pprof.Lookup(name)
		if p == nil {
			writeError(w, http.StatusNotFound, "not_found", "unknown profile "+name)
			return
		}
		debug, _ := strconv.Atoi(r.URL.Query().Get("debug"))
		if name == "heap" && r.URL.Query().Get("gc") != "" {
			runtime.GC()
		}
		if debug > 0 {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		} else {
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Header().Set("Content-Disposition", `attachment; filename="`+name+`"`)
		}
		p.WriteTo(w, debug)
	}
}
