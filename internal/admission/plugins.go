package admission

import (
	"errors"
	"fmt"
	"slices"
)

// namespaceLifecycle is kube's NamespaceLifecycle plugin, which lapis's objects pipeline always
// applies itself (it is not in defaultPlugins): naming it is allowed, disabling it changes nothing.
const namespaceLifecycle = "NamespaceLifecycle"

// runs reports whether the chain has a plugin of that name.
func runs(name string) bool {
	return name == namespaceLifecycle || slices.ContainsFunc(defaultPlugins, func(p plugin) bool { return p.name == name })
}

// PluginNames is the chain's plugins, in kube's order, after kube-apiserver's
// --enable-admission-plugins and --disable-admission-plugins: lapis's plugins (kube-apiserver's
// default ones) less the disabled ones. Enabling a plugin lapis does not run is refused rather
// than silently not done; disabling one is nothing to do, as disabling a plugin that is off is
// in kube. A name in both lists is refused with kube's message.
func PluginNames(enabled, disabled []string) ([]string, error) {
	var errs []error
	for _, name := range enabled {
		if !runs(name) {
			errs = append(errs, fmt.Errorf("enable-admission-plugins plugin %q is not one lapis runs (it runs kube-apiserver's default plugins)", name))
		}
		if slices.Contains(disabled, name) {
			errs = append(errs, fmt.Errorf("%v in enable-admission-plugins and disable-admission-plugins overlapped", name))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	names := make([]string, 0, len(defaultPlugins))
	for _, p := range defaultPlugins {
		if !slices.Contains(disabled, p.name) {
			names = append(names, p.name)
		}
	}
	return names, nil
}

// Runs reports whether the chain built with these flags runs the named plugin.
func Runs(name string, enabled, disabled []string) bool {
	names, err := PluginNames(enabled, disabled)
	return err == nil && slices.Contains(names, name)
}
