package server

import (
	"context"
	"errors"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
)

// recorder is a chain that records what it was asked and answers err.
type recorder struct {
	ops      []admission.Operation // handled
	admitted []string
	err      error
}

func (r *recorder) Handles(op admission.Operation) bool {
	for _, o := range r.ops {
		if o == op {
			return true
		}
	}
	return false
}

func (r *recorder) Admit(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	r.admitted = append(r.admitted, "admit "+a.GetName())
	return r.err
}

func (r *recorder) Validate(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	r.admitted = append(r.admitted, "validate "+a.GetName())
	return r.err
}

func attrs(name string, op admission.Operation) admission.Attributes {
	return admission.NewAttributesRecord(nil, nil, schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, "default", name,
		schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, "", op, nil, false, nil)
}

func TestAdmissionGate(t *testing.T) {
	denied := errors.New("denied")
	for _, tc := range []struct {
		name   string
		chain  *recorder // nil: the chain could not be built
		op     admission.Operation
		want   []string
		forbid bool
		err    error
	}{
		{"handled", &recorder{ops: []admission.Operation{admission.Create}}, admission.Create, []string{"admit x", "validate x"}, false, nil},
		{"not handled", &recorder{ops: []admission.Operation{admission.Delete}}, admission.Create, nil, false, nil},
		{"refused by the chain", &recorder{ops: []admission.Operation{admission.Create}, err: denied}, admission.Create, []string{"admit x", "validate x"}, false, denied},
		{"no chain", nil, admission.Create, nil, true, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newAdmissionGate()
			a := attrs("x", tc.op)
			done := make(chan [2]error, 1)
			go func() {
				done <- [2]error{g.Admit(context.Background(), a, nil), g.Validate(context.Background(), a, nil)}
			}()
			select {
			case <-done:
				t.Fatal("a write went through before the chain was there")
			case <-time.After(20 * time.Millisecond):
			}
			if tc.chain == nil {
				g.use(nil)
			} else {
				g.use(tc.chain)
			}
			errs := <-done
			for _, err := range errs {
				switch {
				case tc.forbid:
					if !apierrors.IsForbidden(err) {
						t.Errorf("error %v, want Forbidden", err)
					}
				case !errors.Is(err, tc.err):
					t.Errorf("error %v, want %v", err, tc.err)
				}
			}
			if tc.chain != nil && len(tc.chain.admitted) != len(tc.want) {
				t.Errorf("chain saw %v, want %v", tc.chain.admitted, tc.want)
			}
		})
	}
}

func TestAdmissionGateGivesUpWithTheWrite(t *testing.T) {
	g := newAdmissionGate()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := g.Admit(ctx, attrs("x", admission.Create), nil); !apierrors.IsForbidden(err) {
		t.Errorf("error %v, want Forbidden once the write's context ended", err)
	}
}
