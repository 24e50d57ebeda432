package train

import (
	"testing"

	"github.com/edgebnn/edgebnn/convert/bnnconfig"
)

// caseKeysInference is a valid bayesianize inference config whose entry keys differ only in case:
// the class name "Linear" and a module named "linear" (e.g. a CIFAR ResNet's `self.linear`).
// bnnconfig matches entry keys exactly (module names and class names are case-sensitive) and
// accepts it; the keys are names of a map, not of struct fields.
const caseKeysInference = `{"inference": {"Linear": "ffg", "linear": {"inference": "ffg", "init_sd": 1e-3}}}`

// TestConfigInlineInferenceCaseKeys: a training config with that inference config inline is
// accepted: its keys are a map's, not struct fields, and bnnconfig.Parse takes them (the first
// strict reader refused `member "linear" repeats "Linear"`).
func TestConfigInlineInferenceCaseKeys(t *testing.T) {
	if _, err := bnnconfig.Parse([]byte(caseKeysInference)); err != nil {
		t.Fatalf("bnnconfig refuses the inference config itself: %v", err)
	}
	cfg := DefaultConfig()
	if err := cfg.ParseConfig([]byte(`{"posterior": "ffg_w", "inference": `+caseKeysInference+`}`), "run.json"); err != nil {
		t.Errorf("a config with a valid inline inference config: %v", err)
	}
}

// TestCheckpointInferenceCaseKeys: the trainer records the inference config inline in its
// checkpoints (Inference.MarshalJSON); a run whose inference config has such keys writes a
// checkpoint that ReadState and Resume read back.
func TestCheckpointInferenceCaseKeys(t *testing.T) {
	c := toyConfig(t, "ffg_w", caseKeysInference)
	c.Epochs = 1
	out := trainRun(t, c).Config.Out
	if _, err := ReadState(out); err != nil {
		t.Errorf("ReadState of our own checkpoint: %v", err)
	}
	if _, err := Resume(out, nil); err != nil {
		t.Errorf("Resume of our own checkpoint: %v", err)
	}
}
