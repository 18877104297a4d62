package httpapi

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Every error code the package replies with is in the package doc's list
// of codes: bad_body, too_many_operations, transaction_too_large,
// invalid_range, commit_unknown_result and profiling_busy were missing
// from it.
func TestErrorCodesDocumented(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	d := string(doc)
	start, end := strings.Index(d, "// Errors are JSON"), strings.Index(d, "// With Password set")
	if start < 0 || end < start {
		t.Fatal("doc.go has no list of error codes")
	}
	listed := map[string]bool{}
	for _, w := range regexp.MustCompile(`[a-z]+(?:_[a-z]+)*`).FindAllString(d[start:end], -1) {
		listed[w] = true
	}
	uses := regexp.MustCompile(`(?:writeError\(w, [^,]+, |return http\.Status\w+, |return nil, |code :?= |status, code = [^,]+, )"([a-z_]+)"`)
	files, _ := filepath.Glob("*.go")
	found := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") || f == "doc.go" {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range uses.FindAllStringSubmatch(string(src), -1) {
			found++
			if !listed[m[1]] {
				t.Errorf("%s: error code %q is not in the package doc's list", f, m[1])
			}
		}
	}
	if found < 20 {
		t.Fatalf("found only %d uses of error codes: the pattern no longer matches the code", found)
	}
}
