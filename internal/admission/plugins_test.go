package admission

import (
	"slices"
	"strings"
	"testing"
)

func TestPluginNames(t *testing.T) {
	all := make([]string, len(defaultPlugins))
	for i, p := range defaultPlugins {
		all[i] = p.name
	}
	without := func(name string) []string {
		return slices.DeleteFunc(slices.Clone(all), func(n string) bool { return n == name })
	}
	tests := []struct {
		name              string
		enabled, disabled []string
		want              []string
		err               string
	}{
		{name: "defaults", want: all},
		{name: "envtest's", disabled: []string{"ServiceAccount"}, want: without("ServiceAccount")},
		{name: "enabling one that runs", enabled: []string{"LimitRanger", "NamespaceLifecycle"}, want: all},
		{name: "disabling one that does not run", disabled: []string{"AlwaysPullImages"}, want: all},
		{name: "enabling one lapis does not run", enabled: []string{"AlwaysPullImages"}, err: `plugin "AlwaysPullImages" is not one lapis runs`},
		{name: "both", enabled: []string{"Priority"}, disabled: []string{"Priority"}, err: "Priority in enable-admission-plugins and disable-admission-plugins overlapped"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := PluginNames(tt.enabled, tt.disabled)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || !slices.Equal(got, tt.want) {
				t.Errorf("got %v, %v; want %v", got, err, tt.want)
			}
		})
	}
	if Runs("ServiceAccount", nil, []string{"ServiceAccount"}) || !Runs("ServiceAccount", nil, nil) {
		t.Error("Runs does not follow the flags")
	}
}
