package main

import (
	"runtime/debug"
	"testing"
)

func TestStartGC(t *testing.T) {
	const before = 100
	for _, tc := range []struct {
		name   string
		env    map[string]string
		during int
	}{
		{"GOGC unset", nil, startGCPercent},
		{"GOGC set", map[string]string{"GOGC": "50"}, before},
		{"GOGC=off", map[string]string{"GOGC": "off"}, before},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer debug.SetGCPercent(debug.SetGCPercent(before))
			restore := startGC(func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok })
			if got := debug.SetGCPercent(tc.during); got != tc.during {
				t.Errorf("while starting GOGC is %d, want %d", got, tc.during)
			}
			restore()
			if got := debug.SetGCPercent(before); got != before {
				t.Errorf("after starting GOGC is %d, want %d", got, before)
			}
		})
	}
}
