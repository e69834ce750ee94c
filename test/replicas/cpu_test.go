package replicas

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"runtime/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/encoding/protowire"
)

// labelProfile is a CPU profile of this process, to tell the etcd members' CPU time from the
// clients' (their goroutines carry the labels etcd and clients).
type labelProfile struct {
	buf bytes.Buffer
	on  bool
}

// startLabelProfile starts profiling, unless a profile is already being taken (go test
// -cpuprofile): then stop reports nothing.
func startLabelProfile() *labelProfile {
	p := &labelProfile{}
	p.on = pprof.StartCPUProfile(&p.buf) == nil
	return p
}

// stop ends the profile and returns the CPU time sampled per label key ("etcd", "clients";
// "" for goroutines with neither: the runtime's, the garbage collector's), or nil.
func (p *labelProfile) stop() map[string]time.Duration {
	if !p.on {
		return nil
	}
	pprof.StopCPUProfile()
	split, err := cpuByLabel(p.buf.Bytes(), "etcd", "clients")
	if err != nil {
		return nil
	}
	return split
}

// cpuByLabel sums a pprof CPU profile's cpu/nanoseconds by which of keys its samples' labels
// have (the first that matches; "" for none). It reads the profile.proto fields it needs:
// Profile.sample_type (1), sample (2), string_table (6); Sample.value (2), label (3);
// Label.key (1); ValueType.type (1).
func cpuByLabel(gz []byte, keys ...string) (map[string]time.Duration, error) {
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, err
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		return nil, err
	}
	type sample struct {
		values    []int64
		labelKeys []int64
	}
	var (
		strs    []string
		types   []int64 // sample_type[i].type, a string index
		samples []sample
	)
	for len(raw) > 0 {
		num, typ, n := protowire.ConsumeTag(raw)
		if n < 0 {
			return nil, protowire.ParseError(n)
		}
		raw = raw[n:]
		if typ != protowire.BytesType || (num != 1 && num != 2 && num != 6) {
			if n = protowire.ConsumeFieldValue(num, typ, raw); n < 0 {
				return nil, protowire.ParseError(n)
			}
			raw = raw[n:]
			continue
		}
		msg, n := protowire.ConsumeBytes(raw)
		if n < 0 {
			return nil, protowire.ParseError(n)
		}
		raw = raw[n:]
		switch num {
		case 1:
			fields, err := varintFields(msg)
			if err != nil {
				return nil, err
			}
			types = append(types, first(fields[1]))
		case 2:
			fields, err := varintFields(msg)
			if err != nil {
				return nil, err
			}
			s := sample{values: fields[2]}
			for l := fields[-3]; len(l) >= 2; l = l[2:] {
				lf, err := varintFields(msg[l[0]:l[1]])
				if err != nil {
					return nil, err
				}
				s.labelKeys = append(s.labelKeys, first(lf[1]))
			}
			samples = append(samples, s)
		case 6:
			strs = append(strs, string(msg))
		}
	}
	cpu := -1
	for i, t := range types {
		if t >= 0 && int(t) < len(strs) && strs[t] == "cpu" {
			cpu = i
		}
	}
	if cpu < 0 {
		return nil, errors.New("profile: no cpu sample type")
	}
	out := map[string]time.Duration{}
	for _, s := range samples {
		if cpu >= len(s.values) {
			return nil, fmt.Errorf("profile: a sample with %d values", len(s.values))
		}
		key := ""
	match:
		for _, k := range keys {
			for _, lk := range s.labelKeys {
				if lk >= 0 && int(lk) < len(strs) && strs[lk] == k {
					key = k
					break match
				}
			}
		}
		out[key] += time.Duration(s.values[cpu])
	}
	return out, nil
}

// varintFields reads a message's varint fields, packed or not, by field number; its
// length-delimited fields' start and end offsets go, in pairs, under the negated field number.
func varintFields(msg []byte) (map[protowire.Number][]int64, error) {
	out := map[protowire.Number][]int64{}
	for off := 0; off < len(msg); {
		num, typ, n := protowire.ConsumeTag(msg[off:])
		if n < 0 {
			return nil, protowire.ParseError(n)
		}
		off += n
		switch typ {
		case protowire.VarintType:
			v, n := protowire.ConsumeVarint(msg[off:])
			if n < 0 {
				return nil, protowire.ParseError(n)
			}
			off += n
			out[num] = append(out[num], int64(v))
		case protowire.BytesType:
			b, n := protowire.ConsumeBytes(msg[off:])
			if n < 0 {
				return nil, protowire.ParseError(n)
			}
			start := off + n - len(b)
			off += n
			out[-num] = append(out[-num], int64(start), int64(off))
			if num == 2 { // Sample.value, packed
				for len(b) > 0 {
					v, n := protowire.ConsumeVarint(b)
					if n < 0 {
						return nil, protowire.ParseError(n)
					}
					b = b[n:]
					out[num] = append(out[num], int64(v))
				}
			}
		default:
			n := protowire.ConsumeFieldValue(num, typ, msg[off:])
			if n < 0 {
				return nil, protowire.ParseError(n)
			}
			off += n
		}
	}
	return out, nil
}

func first(v []int64) int64 {
	if len(v) == 0 {
		return -1
	}
	return v[0]
}

// histogramSum is the sum and count of a histogram in this process's default Prometheus
// registry, where the embedded etcd members record theirs (all members in one).
func histogramSum(name string) (time.Duration, uint64, error) {
	families, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		return 0, 0, err
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		var sum float64
		var count uint64
		for _, m := range f.GetMetric() {
			sum += m.GetHistogram().GetSampleSum()
			count += m.GetHistogram().GetSampleCount()
		}
		return time.Duration(sum * float64(time.Second)), count, nil
	}
	return 0, 0, nil // not observed yet
}
