package main

import (
	"io"
	"log/slog"

	"github.com/spf13/pflag"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/klog/v2"
)

// logging is kube-apiserver's logging configuration (component-base/logs: -v/--v, --vmodule,
// --logging-format, --log-flush-frequency, …): kube's libraries inside lapis log through klog
// at that verbosity, the request log (httplog) at -v=3 included. lapis's own messages keep
// their slog text form at the same verbosity: slog's Debug is klog's V(4).
type logging struct{ cfg *logsapi.LoggingConfiguration }

// addLoggingFlags registers kube-apiserver's logging flags in fs.
func addLoggingFlags(fs *pflag.FlagSet) *logging {
	l := &logging{cfg: logsapi.NewLoggingConfiguration()}
	logsapi.AddFlags(l.cfg, fs)
	return l
}

// apply configures klog as kube-apiserver does (once per process) and returns lapis's logger,
// both writing to stderr.
func (l *logging) apply(stdout, stderr io.Writer) (*slog.Logger, error) {
	if err := logsapi.ValidateAndApplyWithOptions(l.cfg, &logsapi.LoggingOptions{ErrorStream: stderr, InfoStream: stdout}, nil); err != nil {
		return nil, err
	}
	return slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: klogLevel{}})), nil
}

// klogLevel is the slog level klog's verbosity allows: Debug from -v=4 (logr's mapping of
// slog levels to verbosities), Info below.
type klogLevel struct{}

func (klogLevel) Level() slog.Level {
	if klog.V(4).Enabled() {
		return slog.LevelDebug
	}
	return slog.LevelInfo
}
