//go:build linux && race

package netloop

const raceEnabled = true
