package torchpt

import (
	"bytes"
	"fmt"
	"math/big"
	"strings"

	"github.com/edgebnn/edgebnn/convert/safetensors"
	"github.com/edgebnn/edgebnn/internal/clip"
	"github.com/nlpodyssey/gopickle/pickle"
	"github.com/nlpodyssey/gopickle/types"
)

// unpickle decodes data.pkl. Only the globals a state_dict needs are
// resolved; any other class (for example a torch.nn module of a pickled
// network) is an error. Storages are returned as lazy references.
func unpickle(pkl []byte, lim Limits) (obj interface{}, refs map[string]*storageRef, err error) {
	if err := scanPickle(pkl, lim); err != nil {
		return nil, nil, err
	}
	refs = map[string]*storageRef{}
	u := pickle.NewUnpickler(bytes.NewReader(pkl))
	u.FindClass = findClass
	u.PersistentLoad = func(id interface{}) (interface{}, error) {
		return persistentLoad(id, refs)
	}
	defer func() {
		// gopickle is third-party code; turn any panic on hostile input
		// into an error.
		if r := recover(); r != nil {
			obj, refs, err = nil, nil, fmt.Errorf("malformed pickle: %s", clip.V(r))
		}
	}()
	obj, err = u.Load()
	if err != nil {
		return nil, nil, clip.Error(err)
	}
	return obj, refs, nil
}

// findClass resolves the globals a state_dict pickle uses.
func findClass(module, name string) (interface{}, error) {
	full := module + "." + name
	switch full {
	case "torch._utils._rebuild_tensor_v2":
		return callable(rebuildTensor), nil
	case "torch._utils._rebuild_parameter":
		return callable(rebuildParameter), nil
	case "collections.OrderedDict":
		return &types.OrderedDictClass{}, nil
	}
	if module == "torch" && strings.HasSuffix(name, "Storage") {
		return &storageClass{name: full, dtype: storageDTypes[name]}, nil
	}
	if strings.HasPrefix(module, "torch.nn.modules") || module == "__main__" {
		return nil, fmt.Errorf("%w: the pickle references class %s — it looks like a whole nn.Module was saved; save net.state_dict() instead", ErrNotStateDict, clip.S(full))
	}
	return nil, fmt.Errorf("%w: the pickle references unsupported Python global %s", ErrNotStateDict, clip.S(full))
}

// callable adapts a Go function to gopickle's Callable.
type callable func(args ...interface{}) (interface{}, error)

// Call implements types.Callable.
func (c callable) Call(args ...interface{}) (interface{}, error) { return c(args...) }

// rebuildTensor implements torch._utils._rebuild_tensor_v2(storage,
// storage_offset, size, stride, requires_grad, backward_hooks[, metadata]).
func rebuildTensor(args ...interface{}) (interface{}, error) {
	if len(args) != 6 && len(args) != 7 {
		return nil, fmt.Errorf("_rebuild_tensor_v2: %d arguments, want 6 or 7", len(args))
	}
	st, ok := args[0].(*storageRef)
	if !ok {
		return nil, fmt.Errorf("_rebuild_tensor_v2: first argument is %T, not a storage", args[0])
	}
	off, ok := toInt64(args[1])
	if !ok {
		return nil, fmt.Errorf("_rebuild_tensor_v2: storage offset %s is not an integer", clip.V(args[1]))
	}
	size, err := intTuple(args[2], "size")
	if err != nil {
		return nil, err
	}
	stride, err := intTuple(args[3], "stride")
	if err != nil {
		return nil, err
	}
	return &rawTensor{storage: st, offset: off, size: size, stride: stride}, nil
}

// rebuildParameter implements torch._utils._rebuild_parameter(data,
// requires_grad, backward_hooks): a Parameter is kept as its tensor.
func rebuildParameter(args ...interface{}) (interface{}, error) {
	if len(args) != 3 {
		return nil, fmt.Errorf("_rebuild_parameter: %d arguments, want 3", len(args))
	}
	t, ok := args[0].(*rawTensor)
	if !ok {
		return nil, fmt.Errorf("_rebuild_parameter: data is %T, not a tensor", args[0])
	}
	return t, nil
}

// persistentLoad resolves ("storage", class, key, location, numel).
func persistentLoad(id interface{}, refs map[string]*storageRef) (interface{}, error) {
	tup, ok := id.(*types.Tuple)
	if !ok || tup.Len() != 5 {
		return nil, fmt.Errorf("persistent id %s is not a 5-tuple", clip.V(id))
	}
	if s, _ := tup.Get(0).(string); s != "storage" {
		return nil, fmt.Errorf("persistent id of kind %s, want \"storage\"", clip.V(tup.Get(0)))
	}
	class, ok := tup.Get(1).(*storageClass)
	if !ok {
		return nil, fmt.Errorf("persistent id: storage type %s is not a torch storage class", clip.V(tup.Get(1)))
	}
	key, ok := tup.Get(2).(string)
	if !ok || key == "" || strings.ContainsAny(key, "/\\") {
		return nil, fmt.Errorf("persistent id: invalid storage key %s", clip.V(tup.Get(2)))
	}
	if _, ok := tup.Get(3).(string); !ok {
		return nil, fmt.Errorf("persistent id: storage %s: location %s is not a string", clip.Q(key), clip.V(tup.Get(3)))
	}
	numel, ok := toInt64(tup.Get(4))
	if !ok || numel < 0 {
		return nil, fmt.Errorf("persistent id: storage %s: invalid size %s", clip.Q(key), clip.V(tup.Get(4)))
	}
	if r, ok := refs[key]; ok {
		if r.class.name != class.name || r.numel != numel {
			return nil, fmt.Errorf("storage %s referenced as both %s[%d] and %s[%d]", clip.Q(key), clip.S(r.class.name), r.numel, clip.S(class.name), numel)
		}
		return r, nil
	}
	r := &storageRef{class: class, key: key, numel: numel}
	refs[key] = r
	return r, nil
}

func toInt64(v interface{}) (int64, bool) {
	switch x := v.(type) {
	case int:
		return int64(x), true
	case int64:
		return x, true
	case *big.Int:
		if x.IsInt64() {
			return x.Int64(), true
		}
	}
	return 0, false
}

func intTuple(v interface{}, what string) ([]int64, error) {
	tup, ok := v.(*types.Tuple)
	if !ok {
		return nil, fmt.Errorf("_rebuild_tensor_v2: %s is %T, not a tuple", what, v)
	}
	out := make([]int64, tup.Len())
	for i := range out {
		x, ok := toInt64(tup.Get(i))
		if !ok {
			return nil, fmt.Errorf("_rebuild_tensor_v2: %s[%d] = %s is not an integer", what, i, clip.V(tup.Get(i)))
		}
		out[i] = x
	}
	return out, nil
}

// stateDict unpickles the archive's data.pkl (pkl) and materialises its tensors within lim and
// the budget of a file of dataLen bytes.
func stateDict(arch *archive, pkl []byte, lim Limits, dataLen int) ([]safetensors.Tensor, error) {
	obj, _, err := unpickle(pkl, lim)
	if err != nil {
		return nil, fmt.Errorf("torchpt: %s: %w", clip.Q(arch.prefix+"data.pkl"), err)
	}
	entries, err := dictEntries(obj)
	if err != nil {
		return nil, fmt.Errorf("torchpt: %w", err)
	}
	out := make([]safetensors.Tensor, 0, len(entries))
	seen := map[string]bool{}
	outBudget := lim.budget(dataLen)
	for _, e := range entries {
		name, ok := e.key.(string)
		if !ok {
			return nil, fmt.Errorf("torchpt: %w: key %s (%T) is not a string", ErrNotStateDict, clip.V(e.key), e.key)
		}
		if seen[name] {
			return nil, fmt.Errorf("torchpt: duplicate key %s", clip.Q(name))
		}
		seen[name] = true
		rt, ok := e.value.(*rawTensor)
		if !ok {
			return nil, fmt.Errorf("torchpt: key %s: %w: value is %s, not a tensor", clip.Q(name), ErrNotStateDict, describe(e.value))
		}
		t, err := rt.materialise(arch, lim, &outBudget)
		if err != nil {
			return nil, fmt.Errorf("torchpt: key %s: %w", clip.Q(name), err)
		}
		t.Name = name
		out = append(out, t)
	}
	return out, nil
}

type dictEntry struct{ key, value interface{} }

// dictEntries returns the entries of a pickled dict or OrderedDict in
// order, or ErrNotStateDict.
func dictEntries(obj interface{}) ([]dictEntry, error) {
	switch d := obj.(type) {
	case *types.OrderedDict:
		out := make([]dictEntry, 0, d.Len())
		for el := d.List.Front(); el != nil; el = el.Next() {
			e := el.Value.(*types.OrderedDictEntry)
			out = append(out, dictEntry{e.Key, e.Value})
		}
		return out, nil
	case *types.Dict:
		out := make([]dictEntry, 0, len(*d))
		for _, e := range *d {
			out = append(out, dictEntry{e.Key, e.Value})
		}
		return out, nil
	}
	return nil, fmt.Errorf("%w: the pickle holds %s", ErrNotStateDict, describe(obj))
}

// describe names the Python type of an unpickled value for error messages.
func describe(v interface{}) string {
	switch x := v.(type) {
	case nil:
		return "None"
	case *rawTensor:
		return "a tensor"
	case *types.GenericObject:
		return "an object of class " + clip.S(x.Class.Module+"."+x.Class.Name)
	case *types.List:
		return "a list"
	case *types.Tuple:
		return "a tuple"
	case *types.Dict, *types.OrderedDict:
		return "a dict"
	case string:
		return "a string"
	case int, int64, bool, float64:
		return "the value " + clip.V(x)
	}
	return fmt.Sprintf("a %T", v)
}
