package caskade

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"io/fs"
	"strings"
	"testing"
)

// The dump format is documented where go doc shows it: on Dump, which
// "caskade dump --help" points to, not on an unexported declaration.
func TestDumpFormatIsInGoDoc(t *testing.T) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi fs.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	p, err := doc.NewFromFiles(fset, filesOf(pkgs["caskade"]), "github.com/caskade/caskade")
	if err != nil {
		t.Fatal(err)
	}
	var dump string
	for _, ty := range p.Types {
		for _, m := range ty.Methods {
			if ty.Name == "DB" && m.Name == "Dump" {
				dump = m.Doc
			}
		}
	}
	for _, want := range []string{`"caskade-dump 1\n"`, "CRC-32C", "key length", "expiry", "flags", "end frame", "pair count"} {
		if !strings.Contains(dump, want) {
			t.Errorf("the doc of DB.Dump does not describe the format (%q missing):\n%s", want, dump)
		}
	}
}

func filesOf(p *ast.Package) []*ast.File {
	var files []*ast.File
	for _, f := range p.Files {
		files = append(files, f)
	}
	return files
}
