package sequences

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Difference is where two runs of a sequence first answered differently.
type Difference struct {
	Sequence Sequence
	Index    int // of the outcome
	Want     Outcome
	Got      Outcome
}

func (d *Difference) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d (%s %s), outcome %d differs\n", d.Sequence.Seed, d.Sequence.Kind.kind, d.Sequence.Name, d.Index)
	for i, st := range d.Sequence.Steps {
		fmt.Fprintf(&b, "  step %d: %s\n", i, st)
	}
	want, _ := json.Marshal(d.Want)
	got, _ := json.Marshal(d.Got)
	fmt.Fprintf(&b, "  want: %s\n  got:  %s", want, got)
	return b.String()
}

// kube500s are kube-apiserver's 500s on requests lapis answers as kube would if it did not
// fail; where kube answers one, the servers' states part and the comparison stops.
var kube500s = []*regexp.Regexp{
	// Server-side apply to a custom resource's scale subresource: kube's field manager
	// converts the Scale as if it were the custom resource (kubernetes/kubernetes#…).
	// A custom resource's scale without its spec replicas field (kube's scale subresource
	// reads it as an error of the server's).
	regexp.MustCompile(`^Internal error occurred: the spec replicas field ".spec.replicas" does not exist$`),
	regexp.MustCompile(`^failed to .* \(/[^;]*; autoscaling/v1, Kind=Scale\) to proper version: request to convert CR to an invalid group/version: autoscaling/v1$`),
	// A Service update whose ports repeat a node port: kube's allocator fails before
	// validation says so (lapis answers validation's 422).
	regexp.MustCompile(`^duplicate nodePort: \{(TCP|UDP|SCTP) \d+\}$`),
}

// knownKube500 reports whether o is one of kube500s and lapis did not answer a 500 too.
func knownKube500(want, got Outcome) bool {
	if want.Code != http.StatusInternalServerError || got.Code == http.StatusInternalServerError {
		return false
	}
	status, _ := want.Body.(map[string]any)
	message, _ := status["message"].(string)
	for _, re := range kube500s {
		if re.MatchString(message) {
			return true
		}
	}
	return false
}

// Compare returns the first difference of got from want, or nil.
func Compare(s Sequence, want, got []Outcome) *Difference {
	for i := range max(len(want), len(got)) {
		var w, g Outcome
		if i < len(want) {
			w = want[i]
		}
		if i < len(got) {
			g = got[i]
		}
		if knownKube500(w, g) {
			return nil
		}
		wj, _ := json.Marshal(w)
		gj, _ := json.Marshal(g)
		if string(wj) != string(gj) {
			return &Difference{Sequence: s, Index: i, Want: w, Got: g}
		}
	}
	return nil
}

// Live runs s on both servers at once and compares lapis's outcomes with kube's, the object
// named name on both.
func Live(ctx context.Context, kube, lapis *Target, s Sequence, name string) (*Difference, error) {
	type result struct {
		out []Outcome
		err error
	}
	kubeDone := make(chan result, 1)
	go func() {
		out, err := kube.Run(ctx, s, name)
		kubeDone <- result{out, err}
	}()
	got, err := lapis.Run(ctx, s, name)
	want := <-kubeDone
	if err != nil {
		return nil, err
	}
	if want.err != nil {
		return nil, want.err
	}
	return Compare(s, want.out, got), nil
}

// Confirm runs a differing sequence again, from the start of a second, and returns the
// difference it finds then (nil: none). kube orders managedFields entries, and chooses which to
// keep, by the second of their times: a sequence whose writes fall on both sides of a second
// on one server and not on the other can differ by that alone.
func Confirm(ctx context.Context, kube, lapis *Target, d *Difference) (*Difference, error) {
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second)))
	return Live(ctx, kube, lapis, d.Sequence, d.Sequence.Name+"-again")
}

// Shrink removes steps from a sequence that differs while it still differs, and returns the
// shortest difference found. Each try runs as a new object.
func Shrink(ctx context.Context, kube, lapis *Target, d *Difference) (*Difference, error) {
	tries := 0
	for changed := true; changed; {
		changed = false
		for i := len(d.Sequence.Steps) - 1; i >= 0 && len(d.Sequence.Steps) > 1; i-- {
			shorter := d.Sequence
			shorter.Steps = slices.Delete(slices.Clone(d.Sequence.Steps), i, i+1)
			tries++
			next, err := Live(ctx, kube, lapis, shorter, fmt.Sprintf("%s-x%d", d.Sequence.Name, tries))
			if err != nil {
				return d, err
			}
			if next != nil {
				d, changed = next, true
			}
		}
	}
	return d, nil
}
