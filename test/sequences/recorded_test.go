package sequences

import (
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"testing"
)

// recording is what kube-apiserver answered to the recorded seeds.
type recording struct {
	KubeVersion string     `json:"kubeVersion"`
	Sequences   []recorded `json:"sequences"`
	// Regressions are the written sequences' outcomes, by name.
	Regressions map[string][]Outcome `json:"regressions"`
}

type recorded struct {
	Seed uint64 `json:"seed"`
	// Digest is of the generated steps: a generator that draws differently invalidates it.
	Digest   string    `json:"digest"`
	Outcomes []Outcome `json:"outcomes"`
}

func digest(s Sequence) string {
	b, _ := json.Marshal(struct {
		Kind  string
		Steps []Step
	}{s.Kind.resource, s.Steps})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// TestRecorded runs the recorded seeds on lapis and compares each outcome with kube-apiserver's
// recorded answer. SEQUENCES_RECORD=1 records them from kube-apiserver instead.
func TestRecorded(t *testing.T) {
	if record {
		recordFromKube(t)
		return
	}
	rec := readRecording(t)
	if len(rec.Sequences) != recordedSeeds {
		t.Fatalf("%s has %d sequences, want %d: record again (doc.go)", recordingsFile, len(rec.Sequences), recordedSeeds)
	}
	for _, r := range rec.Sequences {
		s := env.gen.Sequence(r.Seed)
		if digest(s) != r.Digest {
			t.Fatalf("seed %d: the generator no longer draws what was recorded: record again (doc.go)", r.Seed)
		}
		got, err := env.lapis.Run(context.Background(), s, s.Name)
		if err != nil {
			t.Fatalf("seed %d: %v", r.Seed, err)
		}
		if d := Compare(s, r.Outcomes, got); d != nil {
			t.Errorf("%v", d)
		}
	}
}

// TestRegressions runs the written sequences on lapis and compares each outcome with
// kube-apiserver's recorded answer.
func TestRegressions(t *testing.T) {
	if record {
		t.Skip("TestRecorded records them")
	}
	rec := readRecording(t)
	for _, r := range regressions {
		t.Run(r.name, func(t *testing.T) {
			want, ok := rec.Regressions[r.name]
			if !ok {
				t.Fatalf("not recorded: record again (doc.go)")
			}
			s := env.gen.regression(r)
			got, err := env.lapis.Run(context.Background(), s, s.Name)
			if err != nil {
				t.Fatal(err)
			}
			if d := Compare(s, want, got); d != nil {
				t.Errorf("%v", d)
			}
		})
	}
}

func recordFromKube(t *testing.T) {
	if env.kube == nil {
		t.Skip(env.kubeSkip)
	}
	rec := recording{KubeVersion: "kube-apiserver " + "v1.37"}
	for seed := uint64(1); seed <= recordedSeeds; seed++ {
		s := env.gen.Sequence(seed)
		out, err := env.kube.Run(context.Background(), s, s.Name)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		rec.Sequences = append(rec.Sequences, recorded{Seed: seed, Digest: digest(s), Outcomes: out})
	}
	rec.Regressions = map[string][]Outcome{}
	for _, r := range regressions {
		s := env.gen.regression(r)
		out, err := env.kube.Run(context.Background(), s, s.Name)
		if err != nil {
			t.Fatalf("%s: %v", r.name, err)
		}
		rec.Regressions[r.name] = out
	}
	f, err := os.Create(recordingsFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z := gzip.NewWriter(f)
	enc := json.NewEncoder(z)
	enc.SetIndent("", " ")
	if err := enc.Encode(rec); err != nil {
		t.Fatal(err)
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("recorded %d sequences into %s", recordedSeeds, recordingsFile)
}

func readRecording(t *testing.T) recording {
	f, err := os.Open(recordingsFile)
	if err != nil {
		t.Fatalf("%v: record it (doc.go)", err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var rec recording
	if err := json.NewDecoder(z).Decode(&rec); err != nil {
		t.Fatal(err)
	}
	return rec
}
