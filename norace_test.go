//go:build !race

package caskade

// raceEnabled reports whether the tests run under the race detector, which
// changes what they allocate.
const raceEnabled = false
