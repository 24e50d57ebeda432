package boards

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"
)

// validProfile returns a fresh, valid armv6 profile as a JSON object.
func validProfile() map[string]any {
	return map[string]any{
		"name":         "testboard",
		"description":  "A test board",
		"goos":         "linux",
		"goarch":       "arm",
		"goarm":        6,
		"qemu":         "qemu-arm-static",
		"qemu_cpu":     "arm1176",
		"ram_bytes":    512 << 20,
		"budget_bytes": 128 << 20,
		"simd":         map[string]any{"neon": false, "fp16": false, "dotprod": false},
		"test_target":  true,
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestEmbeddedProfilesLoad(t *testing.T) {
	ps, err := Embedded()
	if err != nil {
		t.Fatalf("Embedded: %v", err)
	}
	want := []string{"amd64", "beaglebone-black", "generic-arm64", "rpi-zero2w", "rpi0", "rpi1", "rpi3b", "rpi4", "rpi5"}
	if got := Names(ps); !reflect.DeepEqual(got, want) {
		t.Fatalf("names = %v, want %v", got, want)
	}
	// Every file is named after its profile.
	for _, p := range ps {
		data, err := embedded.ReadFile("profiles/" + p.Name + ".json")
		if err != nil {
			t.Errorf("profile %q: no file profiles/%s.json: %v", p.Name, p.Name, err)
			continue
		}
		if _, err := Parse("x.json", data); err != nil {
			t.Errorf("re-parse %s: %v", p.Name, err)
		}
	}
}

func TestEmbeddedProfileFacts(t *testing.T) {
	ps, err := Embedded()
	if err != nil {
		t.Fatal(err)
	}
	const mib = 1 << 20
	tests := []struct {
		name                string
		platform            string
		cpu                 string
		ram                 int64
		neon, fp16, dotprod bool
		testTarget          bool
	}{
		{"rpi0", "linux/arm/v6", "arm1176", 512 * mib, false, false, false, true},
		{"rpi1", "linux/arm/v6", "arm1176", 512 * mib, false, false, false, true},
		{"rpi-zero2w", "linux/arm64", "cortex-a53", 512 * mib, true, false, false, true},
		{"rpi3b", "linux/arm64", "cortex-a53", 1024 * mib, true, false, false, true},
		{"rpi4", "linux/arm64", "cortex-a72", 4096 * mib, true, false, false, true},
		{"rpi5", "linux/arm64", "cortex-a76", 4096 * mib, true, true, true, true},
		{"beaglebone-black", "linux/arm/v7", "cortex-a8", 512 * mib, true, false, false, true},
		{"generic-arm64", "linux/arm64", "cortex-a53", 1024 * mib, true, false, false, false},
		{"amd64", "linux/amd64", "", 8192 * mib, false, false, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, ok := Lookup(ps, tt.name)
			if !ok {
				t.Fatalf("profile %q missing", tt.name)
			}
			if got := p.Platform(); got != tt.platform {
				t.Errorf("Platform = %q, want %q", got, tt.platform)
			}
			if p.QEMUCPU != tt.cpu {
				t.Errorf("qemu_cpu = %q, want %q", p.QEMUCPU, tt.cpu)
			}
			if p.RAMBytes != tt.ram {
				t.Errorf("ram_bytes = %d, want %d", p.RAMBytes, tt.ram)
			}
			if p.BudgetBytes <= 0 || p.BudgetBytes > p.RAMBytes/2 {
				t.Errorf("budget_bytes = %d, want in (0, ram/2]", p.BudgetBytes)
			}
			if p.SIMD != (SIMD{tt.neon, tt.fp16, tt.dotprod}) {
				t.Errorf("simd = %+v, want neon=%v fp16=%v dotprod=%v", p.SIMD, tt.neon, tt.fp16, tt.dotprod)
			}
			if p.TestTarget != tt.testTarget {
				t.Errorf("test_target = %v, want %v", p.TestTarget, tt.testTarget)
			}
		})
	}
}

func TestEmbeddedTestTargets(t *testing.T) {
	ps, err := Embedded()
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, tt := range TestTargets(ps) {
		lines = append(lines, tt.Line())
	}
	want := []string{
		"arm64-a53 arm64 - qemu-aarch64-static cortex-a53",
		"arm64-a72 arm64 - qemu-aarch64-static cortex-a72",
		"arm64-a76 arm64 - qemu-aarch64-static cortex-a76",
		"armv7 arm 7 qemu-arm-static cortex-a8",
		"armv6 arm 6 qemu-arm-static arm1176",
	}
	if !reflect.DeepEqual(lines, want) {
		t.Fatalf("test targets:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name      string
		edit      func(m map[string]any)
		raw       string // used instead of edit when set
		wantField string
		wantMsg   string
	}{
		{name: "unknown field", edit: func(m map[string]any) { m["cores"] = 4 }, wantField: "cores", wantMsg: "unknown field"},
		{name: "unknown field wrong case", edit: func(m map[string]any) { delete(m, "name"); m["Name"] = "x" }, wantField: "Name", wantMsg: "unknown field"},
		{name: "unknown nested field", edit: func(m map[string]any) { m["simd"] = map[string]any{"sve": true} }, wantField: "simd.sve", wantMsg: "unknown field"},
		{name: "missing name", edit: func(m map[string]any) { delete(m, "name") }, wantField: "name", wantMsg: "missing"},
		{name: "missing ram", edit: func(m map[string]any) { delete(m, "ram_bytes") }, wantField: "ram_bytes", wantMsg: "missing"},
		{name: "empty name", edit: func(m map[string]any) { m["name"] = "" }, wantField: "name", wantMsg: "must not be empty"},
		{name: "bad name", edit: func(m map[string]any) { m["name"] = "Rpi 4" }, wantField: "name", wantMsg: "lower-case"},
		{name: "empty description", edit: func(m map[string]any) { m["description"] = " " }, wantField: "description", wantMsg: "must not be empty"},
		{name: "escape in description", edit: func(m map[string]any) { m["description"] = "Pi \x1b[2J" }, wantField: "description", wantMsg: "control character U+001B at byte 3"},
		{name: "line break in description", edit: func(m map[string]any) { m["description"] = "two\nlines" }, wantField: "description", wantMsg: "control character U+000A at byte 3"},
		{name: "bad goos", edit: func(m map[string]any) { m["goos"] = "plan9" }, wantField: "goos", wantMsg: "not supported"},
		{name: "bad goarch", edit: func(m map[string]any) { m["goarch"] = "mips" }, wantField: "goarch", wantMsg: "not supported"},
		{name: "goarm missing for arm", edit: func(m map[string]any) { delete(m, "goarm") }, wantField: "goarm", wantMsg: `must be 6 or 7 for goarch "arm"`},
		{name: "goarm 5", edit: func(m map[string]any) { m["goarm"] = 5 }, wantField: "goarm", wantMsg: `must be 6 or 7 for goarch "arm"`},
		{name: "goarm on arm64", edit: func(m map[string]any) {
			m["goarch"], m["goarm"], m["qemu"], m["qemu_cpu"] = "arm64", 7, "qemu-aarch64-static", "cortex-a53"
			m["simd"] = map[string]any{"neon": true}
		}, wantField: "goarm", wantMsg: `only allowed with goarch "arm"`},
		{name: "goarm wrong type", edit: func(m map[string]any) { m["goarm"] = "6" }, wantField: "goarm", wantMsg: "must be an integer"},
		{name: "neon wrong type", edit: func(m map[string]any) { m["simd"] = map[string]any{"neon": "yes"} }, wantField: "simd.neon", wantMsg: "must be a boolean"},
		{name: "ram not integer", edit: func(m map[string]any) { m["ram_bytes"] = 1.5 }, wantField: "ram_bytes", wantMsg: "must be an integer"},
		{name: "wrong qemu for arch", edit: func(m map[string]any) { m["qemu"] = "qemu-aarch64-static" }, wantField: "qemu", wantMsg: "cannot run"},
		{name: "missing qemu", edit: func(m map[string]any) { delete(m, "qemu") }, wantField: "qemu", wantMsg: "cannot run"},
		{name: "missing qemu cpu", edit: func(m map[string]any) { delete(m, "qemu_cpu") }, wantField: "qemu_cpu", wantMsg: "not a QEMU CPU"},
		{name: "emulated non-linux", edit: func(m map[string]any) { m["goos"] = "darwin" }, wantField: "goos", wantMsg: "must be \"linux\""},
		{name: "qemu on amd64", edit: func(m map[string]any) {
			m["goarch"] = "amd64"
			delete(m, "goarm")
		}, wantField: "qemu", wantMsg: "must be empty"},
		{name: "amd64 test target", edit: func(m map[string]any) {
			m["goarch"], m["qemu"], m["qemu_cpu"] = "amd64", "", ""
			delete(m, "goarm")
		}, wantField: "test_target", wantMsg: "only emulated"},
		{name: "zero ram", edit: func(m map[string]any) { m["ram_bytes"] = 0 }, wantField: "ram_bytes", wantMsg: "must be positive"},
		{name: "negative budget", edit: func(m map[string]any) { m["budget_bytes"] = -1 }, wantField: "budget_bytes", wantMsg: "must be positive"},
		{name: "budget above ram", edit: func(m map[string]any) { m["budget_bytes"] = 1 << 30 }, wantField: "budget_bytes", wantMsg: "exceeds ram_bytes"},
		{name: "neon on armv6", edit: func(m map[string]any) { m["simd"] = map[string]any{"neon": true} }, wantField: "simd.neon", wantMsg: "ARMv6"},
		{name: "no neon on arm64", edit: func(m map[string]any) {
			m["goarch"], m["qemu"], m["qemu_cpu"] = "arm64", "qemu-aarch64-static", "cortex-a53"
			delete(m, "goarm")
		}, wantField: "simd.neon", wantMsg: "must be true"},
		{name: "fp16 on arm", edit: func(m map[string]any) { m["simd"] = map[string]any{"fp16": true} }, wantField: "simd.fp16", wantMsg: "arm64 feature"},
		{name: "dotprod on arm", edit: func(m map[string]any) { m["simd"] = map[string]any{"dotprod": true} }, wantField: "simd.dotprod", wantMsg: "arm64 feature"},
		{name: "duplicated field", raw: `{"name":"a","name":"b"}`, wantField: "name", wantMsg: "duplicated field"},
		{name: "duplicated field in another case", raw: `{"name":"a","Name":"b"}`, wantField: "Name", wantMsg: `the same as "name"`},
		{name: "nested duplicated field in another case", raw: `{"simd":{"neon":true,"NEON":false}}`, wantField: "simd.NEON", wantMsg: "matched ignoring case"},
		{name: "not an object", raw: `[1,2]`, wantMsg: "must be a JSON object"},
		{name: "syntax error", raw: `{"name": }`, wantMsg: "invalid JSON"},
		{name: "trailing data", raw: string(mustJSON(t, validProfile())) + `{}`, wantMsg: "unexpected data after"},
		{name: "empty file", raw: ``, wantMsg: "invalid JSON"},
	}
	const file = "profiles/test.json"
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := []byte(tt.raw)
			if tt.edit != nil {
				m := validProfile()
				tt.edit(m)
				data = mustJSON(t, m)
			}
			_, err := Parse(file, data)
			if err == nil {
				t.Fatalf("Parse(%s) succeeded, want error about %q", data, tt.wantField)
			}
			var pe *ProfileError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v (%T) is not a *ProfileError", err, err)
			}
			if pe.File != file || pe.Field != tt.wantField {
				t.Errorf("error %q: file=%q field=%q, want file=%q field=%q", err, pe.File, pe.Field, file, tt.wantField)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "boards: "+file+": ") {
				t.Errorf("error %q does not start with %q", msg, "boards: "+file+": ")
			}
			if tt.wantField != "" && !strings.Contains(msg, `field "`+tt.wantField+`": `) {
				t.Errorf("error %q does not name field %q", msg, tt.wantField)
			}
			if !strings.Contains(msg, tt.wantMsg) {
				t.Errorf("error %q does not contain %q", msg, tt.wantMsg)
			}
		})
	}
}

func TestParseValid(t *testing.T) {
	p, err := Parse("x.json", mustJSON(t, validProfile()))
	if err != nil {
		t.Fatal(err)
	}
	want := Profile{
		Name: "testboard", Description: "A test board", GOOS: "linux", GOARCH: "arm", GOARM: 6,
		QEMU: "qemu-arm-static", QEMUCPU: "arm1176", RAMBytes: 512 << 20, BudgetBytes: 128 << 20,
		TestTarget: true,
	}
	if p != want {
		t.Fatalf("Parse = %+v, want %+v", p, want)
	}
	if got, want := p.BuildEnv(), []string{"CGO_ENABLED=0", "GOOS=linux", "GOARCH=arm", "GOARM=6"}; !reflect.DeepEqual(got, want) {
		t.Errorf("BuildEnv = %v, want %v", got, want)
	}
	if got, want := p.QEMUCommand(), []string{"qemu-arm-static", "-cpu", "arm1176"}; !reflect.DeepEqual(got, want) {
		t.Errorf("QEMUCommand = %v, want %v", got, want)
	}
	// Large budgets must survive on 32-bit platforms too.
	m := validProfile()
	m["goarch"], m["qemu"], m["qemu_cpu"], m["simd"] = "arm64", "qemu-aarch64", "cortex-a76", map[string]any{"neon": true, "fp16": true}
	delete(m, "goarm")
	m["ram_bytes"], m["budget_bytes"] = int64(16)<<30, int64(12)<<30
	p, err = Parse("big.json", mustJSON(t, m))
	if err != nil {
		t.Fatal(err)
	}
	if p.RAMBytes != 16<<30 || p.BudgetBytes != 12<<30 || p.GOARM != 0 {
		t.Errorf("big profile = %+v", p)
	}
	if got, want := p.BuildEnv(), []string{"CGO_ENABLED=0", "GOOS=linux", "GOARCH=arm64", "GOARM="}; !reflect.DeepEqual(got, want) {
		t.Errorf("BuildEnv = %v, want %v", got, want)
	}
}

func TestLoadDir(t *testing.T) {
	write := func(t *testing.T, dir, name string, m map[string]any) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), mustJSON(t, m), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("ok", func(t *testing.T) {
		dir := t.TempDir()
		a, b := validProfile(), validProfile()
		a["name"], b["name"] = "zed", "alpha"
		write(t, dir, "zed.json", a)
		write(t, dir, "alpha.json", b)
		if err := os.WriteFile(filepath.Join(dir, "README.txt"), []byte("not a profile"), 0o644); err != nil {
			t.Fatal(err)
		}
		ps, err := LoadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := Names(ps), []string{"alpha", "zed"}; !reflect.DeepEqual(got, want) {
			t.Fatalf("names = %v, want %v", got, want)
		}
	})
	t.Run("duplicate name", func(t *testing.T) {
		dir := t.TempDir()
		write(t, dir, "a.json", validProfile())
		write(t, dir, "b.json", validProfile())
		_, err := LoadDir(dir)
		want := `boards: ` + filepath.Join(dir, "b.json") + `: field "name": duplicate name "testboard" (also in ` + filepath.Join(dir, "a.json") + `)`
		if err == nil || err.Error() != want {
			t.Fatalf("err = %v, want %s", err, want)
		}
	})
	t.Run("malformed names file", func(t *testing.T) {
		dir := t.TempDir()
		m := validProfile()
		m["goarm"] = 8
		write(t, dir, "rpi4.json", m)
		_, err := LoadDir(dir)
		want := `boards: ` + filepath.Join(dir, "rpi4.json") + `: field "goarm": must be 6 or 7 for goarch "arm"`
		if err == nil || err.Error() != want {
			t.Fatalf("err = %v, want %s", err, want)
		}
	})
	t.Run("empty", func(t *testing.T) {
		if _, err := LoadDir(t.TempDir()); err == nil || !strings.Contains(err.Error(), "no *.json profiles") {
			t.Fatalf("err = %v, want no profiles", err)
		}
	})
	t.Run("missing", func(t *testing.T) {
		if _, err := LoadDir(filepath.Join(t.TempDir(), "nope")); err == nil {
			t.Fatal("LoadDir of a missing directory succeeded")
		}
	})
	t.Run("pattern characters in the name", func(t *testing.T) {
		// filepath.Glob(dir+"/*.json") matched nothing here, so plan and build did not see the
		// profile they were about to overwrite
		dir := filepath.Join(t.TempDir(), "x[1]*?")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		write(t, dir, "b.json", validProfile())
		if err := os.WriteFile(filepath.Join(dir, "a.txt"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := ProfileFiles(dir)
		if want := []string{filepath.Join(dir, "b.json")}; err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("ProfileFiles = %q, %v; want %q", got, err, want)
		}
		if ps, err := LoadDir(dir); err != nil || len(ps) != 1 {
			t.Fatalf("LoadDir = %v, %v", ps, err)
		}
	})
}

func TestLoadFSNamesFile(t *testing.T) {
	m := validProfile()
	m["extra"] = 1
	fsys := fstest.MapFS{"profiles/rpi4.json": {Data: mustJSON(t, m)}}
	_, err := LoadFS(fsys, "profiles")
	want := `boards: profiles/rpi4.json: field "extra": unknown field`
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v, want %s", err, want)
	}
}

func TestOverlay(t *testing.T) {
	base := []Profile{{Name: "a", Description: "base a"}, {Name: "c"}}
	over := []Profile{{Name: "b"}, {Name: "a", Description: "user a"}}
	got := Overlay(base, over)
	if names := Names(got); !reflect.DeepEqual(names, []string{"a", "b", "c"}) {
		t.Fatalf("names = %v", names)
	}
	if got[0].Description != "user a" {
		t.Errorf("a.Description = %q, want the user profile's", got[0].Description)
	}
}

func TestTestTargetsNaming(t *testing.T) {
	mk := func(name, goarch string, goarm int, qemu, cpu string, target bool) Profile {
		return Profile{Name: name, GOARCH: goarch, GOARM: goarm, QEMU: qemu, QEMUCPU: cpu, TestTarget: target}
	}
	tests := []struct {
		name     string
		profiles []Profile
		want     []string
	}{
		{"empty", nil, nil},
		{"dedup and order", []Profile{
			mk("v6a", "arm", 6, "qemu-arm-static", "arm1176", true),
			mk("v6b", "arm", 6, "qemu-arm-static", "arm1176", true),
			mk("a72", "arm64", 0, "qemu-aarch64-static", "cortex-a72", true),
			mk("a53", "arm64", 0, "qemu-aarch64-static", "cortex-a53", true),
			mk("off", "arm64", 0, "qemu-aarch64-static", "cortex-a57", false),
			mk("host", "amd64", 0, "", "", true),
		}, []string{"arm64-a53", "arm64-a72", "armv6"}},
		{"two armv7 cpus", []Profile{
			mk("bbb", "arm", 7, "qemu-arm-static", "cortex-a8", true),
			mk("a7", "arm", 7, "qemu-arm-static", "cortex-a7", true),
		}, []string{"armv7-a7", "armv7-a8"}},
		{"same cpu two emulators", []Profile{
			mk("x", "arm64", 0, "qemu-aarch64-static", "cortex-a53", true),
			mk("y", "arm64", 0, "qemu-aarch64", "cortex-a53", true),
		}, []string{"arm64-a53", "arm64-a53-2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, tg := range TestTargets(tt.profiles) {
				got = append(got, tg.Name)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("names = %v, want %v", got, tt.want)
			}
		})
	}
	tg := TestTargets([]Profile{
		mk("v6a", "arm", 6, "qemu-arm-static", "arm1176", true),
		mk("v6b", "arm", 6, "qemu-arm-static", "arm1176", true),
	})
	if len(tg) != 1 || !reflect.DeepEqual(tg[0].Boards, []string{"v6a", "v6b"}) {
		t.Fatalf("targets = %+v, want one target with boards v6a, v6b", tg)
	}
}
