package train

import (
	"embed"
	"fmt"
	"strings"
)

// presetFS holds the presets: complete JSON config files (the --config format), one per preset,
// named NAME.json. docs/PRESETS.md gives each setting's source in the papers.
//
//go:embed presets/*.json
var presetFS embed.FS

// Preset is a named training recipe: the settings with which a paper's result (or one of ours,
// measured in docs/RESULTS.md) is reproduced by `edgebnn train --preset NAME`.
type Preset struct {
	// Name is what --preset and the config key preset take.
	Name string
	// Summary is the one-line description `edgebnn train --preset list` prints.
	Summary string
}

// presets lists every preset in the order `--preset list` prints them; each has a file
// presets/NAME.json (TestPresetFiles checks both ways).
var presets = []Preset{
	{"paper000-table4", "VIFA on Bayesian linear regression (paper 000 §4.1, Table 4): SGD, lr 0.01/1e-4/0.01 for c/F/log ψ, each gradient clipped at norm 10, c from 0, L=10, M=100, 5000 epochs, tail average; needs --data csv:PATH (x1,x2,y)"},
	{"paper003-toy-ffgw", "FFG-W on the 1-D toy (paper 003 App. J.1): 1-50-1 tanh, prior sd 4/√d_in, Adam 1e-3, 20 000 updates of 32 MC samples"},
	{"paper003-toy-fcgw", "FCG-W (full-covariance q(W) per layer) on the 1-D toy (J.1): 1-50-1 tanh, prior sd 4/√d_in (d_in with the bias) for weights and biases, Adam 1e-3, 20 000 updates of 32 MC samples"},
	{"paper003-toy-ffgu", "FFG-U on the 1-D toy (J.1): diagonal q(U), U 25×2 and 1×25, prior sd 4/√d_in, Adam 1e-3, 20 000 updates of 32 samples"},
	{"paper003-toy-fcgu", "FCG-U (full-covariance q(U)) on the 1-D toy (J.1): as ffgu, learning rate ×0.1 after 10 000 updates"},
	{"paper003-toy-ensembleu", "Ensemble-U (8 members) on the 1-D toy (J.1): as ffgu, learning rate ×0.1 after 10 000 updates"},
	{"paper003-toy-hmc", "the exact posterior of the 1-D toy (J.1's NUTS reference): prior sd 4/√d_in, noise variance 0.01 fixed, 4 NUTS chains of 1250 warm-up + 5000 draws (J.1's 25 000 samples, 5000 burn-in), 1000 kept as an ensemble"},
	{"paper003-fmnist-ffgu", "FFG-U with paper 003 J.2's (CIFAR) recipe on the Fashion-MNIST MLP: prior sd 1/√d_in, q(U) variance 1e-3, Adam 1e-3 ×0.1 at 200, 300 epochs (100 ML, 50 annealing), 20 test samples"},
	{"paper003-fmnist-ensembleu", "Ensemble-U (5 members) with paper 003 J.2's recipe on the Fashion-MNIST MLP: as paper003-fmnist-ffgu, λ_max 0.1"},
	{"paper004-fmnist-fsvi", "FSVI as timrudner/FSVI's Fashion-MNIST config runs it (paper 004 Table 1): its CNN, fsvi_kl last_layer, corrupted context of 32 (the code's; Table 1 names random monochrome), output prior N(θ₀, 1) around the initial network, initial σ e⁻¹⁰ (hidden) and e⁻⁴ (output), SGD 0.005 momentum 0.9 with cosine decay to ×0.005, element-wise clipping at 1, batch 128, 200 epochs"},
	{"edgebnn-fmnist-ffgu", "our measured FFG-U recipe (87.89 ± 0.10 %, 3 seeds; docs/results/j2settings.md): prior sd 8/√d_in, Adam 3e-3 ×0.1 after 8, 12 epochs (bench/configs/fmnist_ffgu.json)"},
	{"edgebnn-fmnist-fsvi", "our FSVI recipe for paper 004's Table 1 (docs/RESULTS.md): the MLP 784-256-256-10, fsvi_kl last_layer, random-monochrome context of 32, prior N(0, 1), initial σ 1e-4, Adam 3e-3 ×0.1 after 6, 10 epochs (bench/fsvi_table1.sh's FSVI row)"},
	{"edgebnn-fmnist-ensembleu", "our measured Ensemble-U recipe (docs/RESULTS.md, 88.73 % over 3 seeds): 8 members, λ_max 0.03, prior sd 8/√d_in, Adam 3e-3 ×0.1 after 16, 24 epochs (bench/configs/fmnist_ensembleu24.json with max_lamda 0.03)"},
}

// Presets returns the presets in listing order.
func Presets() []Preset { return append([]Preset(nil), presets...) }

// PresetNames returns the presets' names, comma-separated, for error messages.
func PresetNames() string {
	names := make([]string, len(presets))
	for i, p := range presets {
		names[i] = p.Name
	}
	return strings.Join(names, ", ")
}

// PresetJSON returns the config file of the named preset.
func PresetJSON(name string) ([]byte, error) {
	for _, p := range presets {
		if p.Name == name {
			b, err := presetFS.ReadFile("presets/" + name + ".json")
			if err != nil {
				return nil, fmt.Errorf("preset %s: %w", name, err)
			}
			return b, nil
		}
	}
	return nil, fmt.Errorf("preset %q is unknown (known: %s)", name, PresetNames())
}

// ApplyPreset decodes the named preset over c (the keys it does not name keep their values) and
// records its name in c.Preset. Apply it before the keys that should override it.
func (c *Config) ApplyPreset(name string) error {
	b, err := PresetJSON(name)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if err := c.decode(b, "preset "+name); err != nil {
		return err
	}
	c.Preset = name
	return nil
}
