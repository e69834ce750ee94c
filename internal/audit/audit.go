package audit

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	"gopkg.in/natefinch/lumberjack.v2"

	"k8s.io/apimachinery/pkg/util/sets"
	auditinternal "k8s.io/apiserver/pkg/apis/audit"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	kubeaudit "k8s.io/apiserver/pkg/audit"
	"k8s.io/apiserver/pkg/audit/policy"
	genericfilters "k8s.io/apiserver/pkg/endpoints/filters"
	"k8s.io/apiserver/pkg/endpoints/request"
	pluginlog "k8s.io/apiserver/plugin/pkg/audit/log"
	"k8s.io/klog/v2"
)

// Options are kube-apiserver's audit log flags of the same names.
type Options struct {
	// LogPath is the file events are written to; "-" is standard output; empty disables the
	// log backend.
	LogPath string
	// PolicyFile is an audit.k8s.io/v1 Policy; without one no event is recorded.
	PolicyFile string
	// MaxAge (days), MaxBackups and MaxSize (megabytes) rotate the log file as kube does;
	// MaxSize 0 never rotates it. Compress gzips rotated files.
	MaxAge, MaxBackups, MaxSize int
	Compress                    bool
	// Format is "json" (one event per line) or "legacy" (one line of text per event).
	Format string
}

// DefaultOptions are kube-apiserver's defaults.
func DefaultOptions() Options {
	return Options{MaxAge: 366, MaxBackups: 100, MaxSize: 100, Format: pluginlog.FormatJson}
}

// AddFlags registers the options as kube-apiserver's flags, with kube's defaults and words.
func AddFlags(fs *pflag.FlagSet, o *Options) {
	d := DefaultOptions()
	fs.StringVar(&o.LogPath, "audit-log-path", o.LogPath,
		"If set, all requests coming to the apiserver will be logged to this file.  '-' means standard out.")
	fs.StringVar(&o.PolicyFile, "audit-policy-file", o.PolicyFile,
		"Path to the file that defines the audit policy configuration.")
	fs.IntVar(&o.MaxAge, "audit-log-maxage", d.MaxAge,
		"The maximum number of days to retain old audit log files based on the timestamp encoded in their filename. Setting a value of 0 means old audit log files are not removed based on age.")
	fs.IntVar(&o.MaxBackups, "audit-log-maxbackup", d.MaxBackups,
		"The maximum number of old audit log files to retain. Setting a value of 0 will mean there's no restriction on the number of files.")
	fs.IntVar(&o.MaxSize, "audit-log-maxsize", d.MaxSize,
		"The maximum size in megabytes of the audit log file before it gets rotated. Setting to 0 disables rotation (not recommended).")
	fs.StringVar(&o.Format, "audit-log-format", d.Format,
		"Format of saved audits. \"legacy\" indicates 1-line text format for each event. \"json\" indicates structured json format. Known formats are "+
			strings.Join(pluginlog.AllowedFormats, ",")+".")
	fs.BoolVar(&o.Compress, "audit-log-compress", false, "If set, the rotated log files will be compressed using gzip.")
}

// Validate refuses what kube-apiserver refuses.
func (o Options) Validate() error {
	if o.LogPath == "" {
		return nil
	}
	var errs []error
	if o.Format != "" && !slices.Contains(pluginlog.AllowedFormats, o.Format) {
		errs = append(errs, fmt.Errorf("invalid audit log format %s, allowed formats are %q", o.Format, strings.Join(pluginlog.AllowedFormats, ",")))
	}
	if o.MaxAge < 0 {
		errs = append(errs, fmt.Errorf("--audit-log-maxage %v can't be a negative number", o.MaxAge))
	}
	if o.MaxBackups < 0 {
		errs = append(errs, fmt.Errorf("--audit-log-maxbackup %v can't be a negative number", o.MaxBackups))
	}
	if o.MaxSize < 0 {
		errs = append(errs, fmt.Errorf("--audit-log-maxsize %v can't be a negative number", o.MaxSize))
	}
	return errors.Join(errs...)
}

// Auditing is a configured audit pipeline; the zero value (and nil) audits nothing.
type Auditing struct {
	backend kubeaudit.Backend
	policy  kubeaudit.PolicyRuleEvaluator
	closer  io.Closer
}

// New loads the policy and opens the log as kube-apiserver does: without a log path or without
// a policy nothing is recorded (kube says so at -v=2).
func New(o Options) (*Auditing, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	a := &Auditing{}
	if o.PolicyFile != "" {
		p, err := policy.LoadPolicyFromFile(o.PolicyFile)
		if err != nil {
			return nil, fmt.Errorf("loading audit policy file: %v", err)
		}
		a.policy = policy.NewPolicyRuleEvaluator(p)
	}
	if o.LogPath == "" {
		return a, nil
	}
	if a.policy == nil {
		klog.V(2).Info("No audit policy file provided, no events will be recorded for log backend")
		return a, nil
	}
	w, closer, err := openLog(o)
	if err != nil {
		return nil, err
	}
	format := o.Format
	if format == "" {
		format = pluginlog.FormatJson
	}
	// kube's log backend in its default mode, "blocking": every event is written before the
	// request goes on, and a failed write does not fail the request.
	a.backend = ignoreErrors{pluginlog.NewBackend(w, format, auditv1.SchemeGroupVersion)}
	a.closer = closer
	klog.V(2).Infof("Using audit backend: %s", a.backend)
	return a, nil
}

// openLog is kube's log writer: standard output, the file appended to, or the file rotated.
func openLog(o Options) (io.Writer, io.Closer, error) {
	if o.LogPath == "-" {
		return os.Stdout, nil, nil
	}
	if err := os.MkdirAll(filepath.Dir(o.LogPath), 0o700); err != nil {
		return nil, nil, fmt.Errorf("ensureLogFile: %w", err)
	}
	f, err := os.OpenFile(o.LogPath, os.O_CREATE|os.O_APPEND|os.O_RDWR, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("ensureLogFile: %w", err)
	}
	if o.MaxSize == 0 {
		return f, f, nil
	}
	_ = f.Close()
	l := &lumberjack.Logger{Filename: o.LogPath, MaxAge: o.MaxAge, MaxBackups: o.MaxBackups, MaxSize: o.MaxSize, Compress: o.Compress}
	return l, l, nil
}

// ignoreErrors is kube's "blocking" mode wrapper.
type ignoreErrors struct{ kubeaudit.Backend }

func (i ignoreErrors) ProcessEvents(ev ...*auditinternal.Event) bool {
	i.Backend.ProcessEvents(ev...)
	return true
}

func (i ignoreErrors) String() string { return fmt.Sprintf("ignoreErrors<%s>", i.Backend) }

// Enabled says whether events are recorded.
func (a *Auditing) Enabled() bool { return a != nil && a.backend != nil }

// WithAudit is kube's WithAudit filter: it sits right inside authentication (impersonation and
// authorization inside it), where kube-apiserver's DefaultBuildHandlerChain puts it.
func (a *Auditing) WithAudit(h http.Handler) http.Handler {
	if !a.Enabled() {
		return h
	}
	return genericfilters.WithAudit(h, a.backend, a.policy, LongRunning)
}

// WithFailedAuthenticationAudit is kube's: requests refused by authentication (401) are audited
// too, at the level the policy gives them.
func (a *Auditing) WithFailedAuthenticationAudit(failed http.Handler) http.Handler {
	if !a.Enabled() {
		return failed
	}
	return genericfilters.WithFailedAuthenticationAudit(failed, a.backend, a.policy)
}

// WithAuditInit is kube's outermost filter: every request gets an audit ID (the client's
// Audit-ID header, or a new UUID), echoed in the response's Audit-Id header, and an audit
// context, whether or not auditing is configured.
func WithAuditInit(h http.Handler) http.Handler { return genericfilters.WithAuditInit(h) }

// Shutdown flushes and closes the log.
func (a *Auditing) Shutdown() error {
	if a == nil || a.backend == nil {
		return nil
	}
	a.backend.Shutdown()
	if a.closer != nil {
		return a.closer.Close()
	}
	return nil
}

// LongRunning is kube-apiserver's long-running request check for audit
// (BasicLongRunningRequestCheck of watch and proxy, and of the attach, exec, proxy, log and
// portforward subresources, and profiling): such requests get a ResponseStarted stage when their answer starts.
func LongRunning(r *http.Request, ri *request.RequestInfo) bool {
	if ri == nil {
		return false
	}
	return longRunningVerbs.Has(ri.Verb) || (ri.IsResourceRequest && longRunningSubresources.Has(ri.Subresource)) ||
		(!ri.IsResourceRequest && strings.HasPrefix(ri.Path, "/debug/pprof/"))
}

var (
	longRunningVerbs        = sets.New("watch", "proxy")
	longRunningSubresources = sets.New("attach", "exec", "proxy", "log", "portforward")
)
