// Command mapserver is the baseline of bench/http.sh: a minimal net/http
// server answering GET /v1/kv/{key} from a Go map holding the keys
// loadgen:00000000 ... loadgen:00009999 with 100-byte values, as caskade
// holds them in that benchmark.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"log"
	"net/http"
	"strings"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8380", "listen address")
	flag.Parse()
	m := map[string][]byte{}
	v := bytes.Repeat([]byte("v"), 100)
	for i := range 10000 {
		m[fmt.Sprintf("loadgen:%08d", i)] = v
	}
	http.HandleFunc("/v1/kv/", func(w http.ResponseWriter, r *http.Request) {
		val, ok := m[strings.TrimPrefix(r.URL.Path, "/v1/kv/")]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(val)
	})
	log.Fatal(http.ListenAndServe(*addr, nil))
}
