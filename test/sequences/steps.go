package sequences

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
)

// op is what a step does.
type op string

const (
	opApply       op = "apply"       // server-side apply (PATCH application/apply-patch+yaml)
	opMerge       op = "merge"       // JSON merge patch
	opJSONPatch   op = "jsonpatch"   // JSON patch
	opStrategic   op = "strategic"   // strategic merge patch (built-in kinds; 415 for others)
	opCreate      op = "create"      // POST
	opUpdate      op = "update"      // PUT of the object as last read, changed
	opStatusApply op = "statusapply" // apply to /status
	opStatusMerge op = "statusmerge" // merge patch of /status
	opScaleMerge  op = "scalemerge"  // merge patch of /scale
	opScaleApply  op = "scaleapply"  // apply to /scale
	opScaleUpdate op = "scaleupdate" // PUT of /scale as last read, changed
)

// Step is one write of a sequence.
type Step struct {
	Op      op     `json:"op"`
	Manager string `json:"manager"`
	Force   bool   `json:"force,omitempty"`
	DryRun  bool   `json:"dryRun,omitempty"`
	// Body is the request's body; for updates, a merge patch made to the object as last read.
	Body any `json:"body"`
	// KeepResourceVersion sends an update with the resourceVersion read (else none).
	KeepResourceVersion bool `json:"keepResourceVersion,omitempty"`
}

// Sequence is the writes of managers to one object.
type Sequence struct {
	Seed  uint64
	Kind  *kind
	Name  string
	Steps []Step
}

// Generator makes sequences, the same for the same seed.
type Generator struct {
	kinds []*kind
}

// NewGenerator writes to the built-in kinds and a pool of poolSize custom resource kinds.
func NewGenerator(poolSize int) *Generator {
	return &Generator{kinds: append(builtinKinds(), crdPool(poolSize)...)}
}

// CRDs are the CustomResourceDefinitions the sequences need.
func (g *Generator) CRDs() []map[string]any {
	var crds []map[string]any
	for _, k := range g.kinds {
		if k.crd != nil {
			crds = append(crds, k.crd)
		}
	}
	return crds
}

// Sequence is seed's sequence: custom resources two times in three.
func (g *Generator) Sequence(seed uint64) Sequence {
	r := rand.New(rand.NewPCG(seed, 1))
	var k *kind
	if builtins := 4; r.IntN(3) == 0 {
		k = g.kinds[r.IntN(builtins)]
	} else {
		k = g.kinds[builtins+r.IntN(len(g.kinds)-builtins)]
	}
	s := Sequence{Seed: seed, Kind: k, Name: fmt.Sprintf("s%d", seed)}
	m := &managers{r: r, last: map[string]map[string]any{}, updaters: 2}
	steps := 6 + r.IntN(9)
	if r.IntN(5) == 0 {
		// Each write by a new Update manager, more than the ten kube keeps apart: the oldest
		// fold into ancient-changes.
		m.updaters, steps = 0, 14+r.IntN(8)
	}
	for i := range steps {
		s.Steps = append(s.Steps, m.step(k, s.Name, i == 0))
	}
	return s
}

// managers draws steps and remembers each appliers's last configuration.
type managers struct {
	r    *rand.Rand
	last map[string]map[string]any
	// updaters is how many Update managers write; 0: each write a new one (fresh counts them).
	updaters, fresh int
}

func (m *managers) step(k *kind, name string, first bool) Step {
	r := m.r
	ops := []op{opApply, opApply, opApply, opApply, opMerge, opMerge, opJSONPatch, opUpdate, opCreate}
	if m.updaters == 0 {
		ops = append(ops, opMerge, opMerge, opUpdate, opUpdate)
	}
	if k.builtin {
		ops = append(ops, opStrategic, opStrategic)
	}
	if k.status != nil {
		ops = append(ops, opStatusApply, opStatusMerge)
	}
	if k.scale {
		ops = append(ops, opScaleMerge, opScaleApply, opScaleUpdate)
	}
	o := ops[r.IntN(len(ops))]
	if first && r.IntN(4) != 0 {
		o = opApply
	}
	if o == opScaleApply && !k.builtin && r.IntN(3) != 0 {
		// kube answers 500 to an apply to a custom resource's scale (kube500s), which ends the
		// comparison: rarely, then.
		o = opScaleMerge
	}
	s := Step{Op: o, DryRun: r.IntN(10) == 0}
	switch o {
	case opApply, opStatusApply:
		s.Manager = fmt.Sprintf("apply-%d", r.IntN(3))
		s.Force = r.IntN(4) == 0
		s.Body = m.applied(k, name, s.Manager, o == opStatusApply, first)
	case opScaleApply:
		s.Manager = fmt.Sprintf("apply-%d", r.IntN(3))
		s.Force = r.IntN(3) == 0
		s.Body = map[string]any{"apiVersion": "autoscaling/v1", "kind": "Scale",
			"metadata": map[string]any{"name": name}, "spec": map[string]any{"replicas": pick(r, ints)}}
	case opScaleMerge, opScaleUpdate:
		s.Manager = m.updater()
		s.Body = map[string]any{"spec": map[string]any{"replicas": pick(r, ints)}}
		s.KeepResourceVersion = r.IntN(2) == 0
	case opMerge, opStrategic, opUpdate, opStatusMerge:
		s.Manager = m.updater()
		s.Body = m.patch(k, o == opStatusMerge)
		s.KeepResourceVersion = r.IntN(3) != 0
		if m.updaters == 0 && o != opStatusMerge {
			// A label of its own keeps each manager's entry.
			s.Body.(map[string]any)["metadata"] = map[string]any{"labels": map[string]any{s.Manager: "x"}}
		}
	case opJSONPatch:
		s.Manager = m.updater()
		s.Body = m.jsonPatch(k)
	case opCreate:
		s.Manager = m.updater()
		s.Body = m.whole(k, name, k.top, true)
	}
	return s
}

// updater is the manager of a write that is no apply: one of a few, or each time a new one.
func (m *managers) updater() string {
	if m.updaters == 0 {
		// Numbered in the order of their writes: when kube folds the oldest into
		// ancient-changes, writes in the same second go by name, and names then sort as the
		// writes came, whichever second the clock of each server is in.
		m.fresh++
		return fmt.Sprintf("update-%02d", m.fresh)
	}
	return fmt.Sprintf("update-%d", m.r.IntN(m.updaters))
}

// whole is an object of kind k with content drawn from top.
func (m *managers) whole(k *kind, name string, top *node, full bool) map[string]any {
	o := top.value(m.r, full).(map[string]any)
	o["apiVersion"], o["kind"] = k.apiVersion, k.kind
	meta := metadata.value(m.r, false).(map[string]any)
	meta["name"] = name
	o["metadata"] = meta
	return o
}

// applied is a manager's next configuration: new, or its last with some fields kept.
func (m *managers) applied(k *kind, name, manager string, status, first bool) map[string]any {
	top := k.top
	if status {
		top = k.status
	}
	key := fmt.Sprintf("%s/%v", manager, status)
	next := m.whole(k, name, top, first || k.builtin && !status)
	if last, ok := m.last[key]; ok && m.r.IntN(2) == 0 {
		// Keep some of the last configuration's top-level fields, drop others.
		for field, v := range sorted(last) {
			if m.r.IntN(3) != 0 {
				next[field] = v
			}
		}
	}
	m.last[key] = next
	return next
}

// patch is a merge patch of content drawn from k (its status for status): fields set, and
// now and then one removed with null.
func (m *managers) patch(k *kind, status bool) map[string]any {
	top := k.top
	if status {
		top = k.status
	}
	p := top.value(m.r, false).(map[string]any)
	if m.r.IntN(2) == 0 {
		p["metadata"] = metadata.value(m.r, false)
	}
	if m.r.IntN(4) == 0 {
		p["metadata"] = map[string]any{"labels": map[string]any{pick(m.r, words).(string): nil}}
	}
	if m.r.IntN(5) == 0 && len(top.fields) > 0 {
		p[top.fields[0].name] = nil
	}
	return p
}

// jsonPatch is one or two JSON patch operations on labels and the top fields.
func (m *managers) jsonPatch(k *kind) []any {
	var ops []any
	for range 1 + m.r.IntN(2) {
		label := "/metadata/labels/" + pick(m.r, words).(string)
		switch m.r.IntN(4) {
		case 0:
			ops = append(ops, map[string]any{"op": "add", "path": "/metadata/labels", "value": map[string]any{}})
		case 1:
			ops = append(ops, map[string]any{"op": "add", "path": label, "value": pick(m.r, words)})
		case 2:
			ops = append(ops, map[string]any{"op": "remove", "path": label})
		default:
			t := k.top.fields[m.r.IntN(len(k.top.fields))]
			ops = append(ops, map[string]any{"op": "add", "path": "/" + t.name, "value": t.node.value(m.r, false)})
		}
	}
	return ops
}

// sorted iterates over a map in key order, so that a seed draws the same numbers each time.
func sorted(m map[string]any) func(yield func(string, any) bool) {
	return func(yield func(string, any) bool) {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if !yield(k, m[k]) {
				return
			}
		}
	}
}

// String is the step as one line.
func (s Step) String() string {
	b, _ := json.Marshal(s.Body)
	flags := ""
	if s.Force {
		flags += " force"
	}
	if s.DryRun {
		flags += " dryRun"
	}
	if s.KeepResourceVersion {
		flags += " withResourceVersion"
	}
	return fmt.Sprintf("%s by %s%s: %s", s.Op, s.Manager, flags, b)
}
