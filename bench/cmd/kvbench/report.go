package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
)

// metric is one number of a result.
type metric struct {
	value        float64
	text         string
	higherBetter bool
}

// row is one line of a table. Caskade rows carry a match key; a peer row
// names the caskade row (same workload, that key) its ratio is taken
// against, and optionally a second one shown in parentheses.
type row struct {
	workload string
	engine   string
	config   string
	match    string
	alt      string // a second caskade key to compare with, shown as "(alt: r×)"
	metrics  []metric
	err      error
}

type table struct {
	name  string
	intro string
	rows  []*row
	notes []string
}

func (t *table) add(r *row) { t.rows = append(t.rows, r) }

// caskadeRow finds the caskade row of workload w with key k.
func (t *table) caskadeRow(w, k string) *row {
	for _, r := range t.rows {
		if r.engine == "caskade" && r.workload == w && r.match == k && r.err == nil {
			return r
		}
	}
	return nil
}

// ratios formats caskade's advantage over peer row r against caskade row c:
// caskade/peer for higher-is-better metrics, peer/caskade otherwise, so that
// above 1 always means caskade is better.
func ratios(c, r *row) string {
	if c == nil || len(c.metrics) != len(r.metrics) {
		return "n/a"
	}
	parts := make([]string, len(r.metrics))
	for i, m := range r.metrics {
		cv, pv := c.metrics[i].value, m.value
		var x float64
		switch {
		case m.higherBetter && pv > 0:
			x = cv / pv
		case !m.higherBetter && cv > 0:
			x = pv / cv
		default:
			parts[i] = "n/a"
			continue
		}
		parts[i] = fmtRatio(x)
	}
	return strings.Join(parts, " · ")
}

func fmtRatio(x float64) string {
	switch {
	case x >= 100:
		return fmt.Sprintf("%.0f×", x)
	case x >= 10:
		return fmt.Sprintf("%.1f×", x)
	case x >= 0.1:
		return fmt.Sprintf("%.2f×", x)
	default:
		// Two significant digits without an exponent: 0.000045×.
		return fmt.Sprintf("%.*f×", int(math.Ceil(-math.Log10(x)))+1, x)
	}
}

func (t *table) write(w io.Writer) {
	if len(t.rows) == 0 {
		return
	}
	fmt.Fprintf(w, "## %s\n\n", t.name)
	if t.intro != "" {
		fmt.Fprintf(w, "%s\n\n", t.intro)
	}
	// Group rows by workload, in the order workloads first appear.
	order := map[string]int{}
	for _, r := range t.rows {
		if _, ok := order[r.workload]; !ok {
			order[r.workload] = len(order)
		}
	}
	rows := slices.Clone(t.rows)
	slices.SortStableFunc(rows, func(a, b *row) int { return order[a.workload] - order[b.workload] })
	fmt.Fprintln(w, "| workload | engine | config | result | ratio (caskade vs this peer) |")
	fmt.Fprintln(w, "| --- | --- | --- | --- | --- |")
	for _, r := range rows {
		var result, ratio string
		if r.err != nil {
			result = "error: " + oneLine(r.err.Error())
			ratio = "n/a"
		} else {
			texts := make([]string, len(r.metrics))
			for i, m := range r.metrics {
				texts[i] = m.text
			}
			result = strings.Join(texts, " · ")
			if r.engine == "caskade" {
				ratio = "—"
			} else {
				ratio = ratios(t.caskadeRow(r.workload, r.match), r)
				if r.alt != "" {
					if c := t.caskadeRow(r.workload, r.alt); c != nil {
						ratio += fmt.Sprintf(" (vs %s: %s)", r.alt, ratios(c, r))
					}
				}
			}
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", r.workload, r.engine, r.config, result, ratio)
	}
	fmt.Fprintln(w)
	for _, n := range t.notes {
		fmt.Fprintf(w, "- %s\n", n)
	}
	if len(t.notes) > 0 {
		fmt.Fprintln(w)
	}
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	s = strings.ReplaceAll(s, "|", "\\|")
	if len(s) > 160 {
		s = s[:160] + "…"
	}
	return s
}
