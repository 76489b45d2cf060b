package listings

import (
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Class groups GPUs the way a renter thinks of them.
type Class string

// GPU classes.
const (
	Consumer    Class = "consumer"
	Workstation Class = "workstation"
	Datacenter  Class = "datacenter"
)

// GPU is one model of the catalog.
type GPU struct {
	Name    string   // canonical name, e.g. "RTX 4090", "A100 80GB SXM"
	VRAMGB  int      // memory per card
	Class   Class    // consumer, workstation or datacenter
	Link    string   // the interconnect the model is built for: "NVLink" (SXM/OAM), "PCIe"
	Aliases []string // other names a user or source uses
}

// catalog is the canonical list. Aliases beyond the automatic ones (the name
// without its "RTX "/"GTX " prefix, spaces ignored) are listed here.
var catalog = []GPU{
	{"GTX 1050 Ti", 4, Consumer, "PCIe", nil},
	{"GTX 1060", 6, Consumer, "PCIe", nil},
	{"GTX 1070", 8, Consumer, "PCIe", nil},
	{"GTX 1070 Ti", 8, Consumer, "PCIe", nil},
	{"GTX 1080", 8, Consumer, "PCIe", nil},
	{"GTX 1080 Ti", 11, Consumer, "PCIe", nil},
	{"GTX 1650", 4, Consumer, "PCIe", nil},
	{"GTX 1660", 6, Consumer, "PCIe", nil},
	{"GTX 1660 SUPER", 6, Consumer, "PCIe", []string{"GTX 1660 S", "1660S"}},
	{"GTX 1660 Ti", 6, Consumer, "PCIe", nil},
	{"RTX 2060", 6, Consumer, "PCIe", nil},
	{"RTX 2060 SUPER", 8, Consumer, "PCIe", []string{"RTX 2060S"}},
	{"RTX 2070", 8, Consumer, "PCIe", nil},
	{"RTX 2070 SUPER", 8, Consumer, "PCIe", []string{"RTX 2070S"}},
	{"RTX 2080", 8, Consumer, "PCIe", nil},
	{"RTX 2080 SUPER", 8, Consumer, "PCIe", []string{"RTX 2080S"}},
	{"RTX 2080 Ti", 11, Consumer, "PCIe", nil},
	{"RTX 3060", 12, Consumer, "PCIe", nil},
	{"RTX 3060 Ti", 8, Consumer, "PCIe", nil},
	{"RTX 3060 Laptop", 6, Consumer, "PCIe", nil},
	{"RTX 3070", 8, Consumer, "PCIe", nil},
	{"RTX 3070 Ti", 8, Consumer, "PCIe", nil},
	{"RTX 3080", 10, Consumer, "PCIe", nil},
	{"RTX 3080 Ti", 12, Consumer, "PCIe", nil},
	{"RTX 3090", 24, Consumer, "PCIe", nil},
	{"RTX 3090 Ti", 24, Consumer, "PCIe", nil},
	{"RTX 4060", 8, Consumer, "PCIe", nil},
	{"RTX 4060 Ti", 16, Consumer, "PCIe", nil},
	{"RTX 4070", 12, Consumer, "PCIe", nil},
	{"RTX 4070 SUPER", 12, Consumer, "PCIe", []string{"RTX 4070S"}},
	{"RTX 4070 Ti", 12, Consumer, "PCIe", nil},
	{"RTX 4070 Ti SUPER", 16, Consumer, "PCIe", []string{"RTX 4070S Ti", "RTX 4070 TiS"}},
	{"RTX 4080", 16, Consumer, "PCIe", nil},
	{"RTX 4080 SUPER", 16, Consumer, "PCIe", []string{"RTX 4080S"}},
	{"RTX 4090", 24, Consumer, "PCIe", nil},
	{"RTX 5080", 16, Consumer, "PCIe", nil},
	{"RTX 5090", 32, Consumer, "PCIe", nil},
	{"Titan V", 12, Consumer, "PCIe", nil},
	{"Titan Xp", 12, Consumer, "PCIe", nil},
	{"Quadro K2200", 4, Workstation, "PCIe", nil},
	{"Quadro RTX 5000", 16, Workstation, "PCIe", []string{"Q RTX 5000"}},
	{"Quadro RTX 6000", 24, Workstation, "PCIe", []string{"Q RTX 6000"}},
	{"RTX A2000", 6, Workstation, "PCIe", []string{"A2000"}},
	{"RTX A4000", 16, Workstation, "PCIe", []string{"A4000"}},
	{"RTX A4500", 20, Workstation, "PCIe", []string{"A4500"}},
	{"RTX A5000", 24, Workstation, "PCIe", []string{"A5000"}},
	{"RTX A6000", 48, Workstation, "PCIe", []string{"A6000"}},
	{"RTX 2000 Ada", 16, Workstation, "PCIe", []string{"RTX 2000Ada"}},
	{"RTX 4000 Ada", 20, Workstation, "PCIe", []string{"RTX 4000Ada"}},
	{"RTX 5000 Ada", 32, Workstation, "PCIe", []string{"RTX 5000Ada"}},
	{"RTX 6000 Ada", 48, Workstation, "PCIe", []string{"RTX 6000Ada"}},
	{"RTX PRO 6000", 96, Workstation, "PCIe", []string{"RTX PRO 6000 Blackwell"}},
	{"Tesla P100", 16, Datacenter, "PCIe", []string{"P100"}},
	{"T4", 16, Datacenter, "PCIe", []string{"Tesla T4"}},
	{"V100 16GB", 16, Datacenter, "NVLink", nil}, // no bare "V100" alias: --gpu v100 shows both sizes
	{"V100 32GB", 32, Datacenter, "NVLink", nil},
	{"A10", 24, Datacenter, "PCIe", nil},
	{"A30", 24, Datacenter, "PCIe", nil},
	{"A40", 48, Datacenter, "PCIe", nil},
	{"L4", 24, Datacenter, "PCIe", nil},
	{"L40", 48, Datacenter, "PCIe", nil},
	{"L40S", 48, Datacenter, "PCIe", nil},
	{"A100 40GB PCIe", 40, Datacenter, "PCIe", nil},
	{"A100 40GB SXM", 40, Datacenter, "NVLink", []string{"A100 SXM4 40GB"}},
	{"A100 80GB PCIe", 80, Datacenter, "PCIe", []string{"A100X"}},
	{"A100 80GB SXM", 80, Datacenter, "NVLink", []string{"A100 SXM4 80GB"}},
	{"H100 PCIe", 80, Datacenter, "PCIe", nil},
	{"H100 SXM", 80, Datacenter, "NVLink", []string{"H100 SXM5", "H100 80GB HBM3"}},
	{"H100 NVL", 94, Datacenter, "NVLink", nil},
	{"H200", 141, Datacenter, "NVLink", []string{"H200 SXM"}},
	{"GH200", 96, Datacenter, "NVLink", nil},
	{"B200", 180, Datacenter, "NVLink", nil},
	{"MI300X", 192, Datacenter, "Infinity Fabric", []string{"Instinct MI300X"}},
}

var (
	byName  = map[string]*GPU{} // canonical name -> GPU
	byAlias = map[string]*GPU{} // compact name or alias -> GPU
)

func init() {
	for i := range catalog {
		g := &catalog[i]
		byName[g.Name] = g
		for _, a := range g.allNames() {
			byAlias[compact(a)] = g
		}
	}
}

// allNames is the canonical name, its listed aliases, and each without a
// leading "RTX "/"GTX "/"Quadro " (so "4090" names the RTX 4090).
func (g *GPU) allNames() []string {
	names := append([]string{g.Name}, g.Aliases...)
	out := names
	for _, n := range names {
		for _, p := range []string{"RTX ", "GTX ", "Quadro "} {
			if strings.HasPrefix(n, p) {
				out = append(out, strings.TrimPrefix(n, p))
			}
		}
	}
	return out
}

// compact lower-cases s and drops everything but letters and digits.
func compact(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Catalog returns every GPU of the catalog, in catalog order.
func Catalog() []GPU { return append([]GPU(nil), catalog...) }

// Lookup returns the catalog GPU with canonical name name.
func Lookup(name string) (GPU, bool) {
	g, ok := byName[name]
	if !ok {
		return GPU{}, false
	}
	return *g, true
}

// Match selects catalog GPUs for a user query (DESIGN §2): a query equal to
// a canonical name or alias (case-insensitive, spaces and punctuation
// ignored) selects that GPU alone; otherwise every GPU whose name or alias
// contains the query. The result is in catalog order; empty when nothing
// matches.
func Match(q string) []GPU {
	c := compact(q)
	if c == "" {
		return nil
	}
	if g, ok := byAlias[c]; ok {
		return []GPU{*g}
	}
	var out []GPU
	for i := range catalog {
		g := &catalog[i]
		for _, a := range g.allNames() {
			if strings.Contains(compact(a), c) {
				out = append(out, *g)
				break
			}
		}
	}
	return out
}

// filler are words a source may add after a model name that do not change
// the card.
var filler = map[string]bool{"accelerator": true, "blackwell": true, "founders": true, "server": true, "oem": true, "hopper": true, "ampere": true}

// maxNameLen bounds the names Normalize works on, so that a hostile or
// garbled name costs nothing.
const maxNameLen = 160

var (
	reMemGB   = regexp.MustCompile(`(\d+(?:\.\d+)?)\s*gb`)
	reCount   = regexp.MustCompile(`^\s*\d+\s*x\s+`)
	reNoise   = regexp.MustCompile(`\b(nvidia|geforce|amd|radeon|generation|workstation|edition|graphics|gpu|card)\b`)
	reFormSXM = regexp.MustCompile(`sxm\d?|hbm3`)
)

// Normalize maps a source's GPU name to a catalog name. vramGB is the
// memory per card the source reports alongside the name (0 when it does
// not); it tells apart models sold with two memory sizes under one name
// (Vast's "A100 SXM4" with gpu_ram 40960 or 81920). Known is false when the
// name is not in the catalog; the name is then returned trimmed but
// otherwise unchanged, so that it is kept and counted, never guessed.
func Normalize(raw string, vramGB float64) (name string, known bool) {
	s := strings.ToLower(strings.TrimSpace(raw))
	if s == "" {
		return "", false
	}
	if len(s) > maxNameLen {
		// No GPU name is this long: keep it, unknown, without the work.
		return strings.TrimSpace(raw), false
	}
	s = reCount.ReplaceAllString(s, "")
	mem := vramGB
	if m := reMemGB.FindStringSubmatch(s); m != nil {
		if v, err := strconv.ParseFloat(m[1], 64); err == nil && mem == 0 {
			mem = v
		}
	}
	s = strings.NewReplacer("-", " ", "_", " ", "(", " ", ")", " ", ",", " ", "/", " ").Replace(s)
	s = reNoise.ReplaceAllString(s, " ")
	form := ""
	switch {
	case reFormSXM.MatchString(s):
		form = "SXM"
	case strings.Contains(s, "nvl"):
		form = "NVL"
	case strings.Contains(s, "pcie") || strings.Contains(s, "pci e"):
		form = "PCIe"
	}
	c := compact(reMemGB.ReplaceAllString(s, " "))
	c = strings.TrimPrefix(strings.TrimPrefix(c, "nvidia"), "geforce")

	switch {
	case strings.HasPrefix(c, "a100"):
		// A100 SXM4 / A100 PCIE / A100X / A100 80GB PCIe / A100-SXM4-80GB.
		if strings.HasPrefix(c, "a100x") {
			return "A100 80GB PCIe", true
		}
		if form != "SXM" && form != "PCIe" || mem == 0 {
			break
		}
		size := "40GB"
		if mem > 60 {
			size = "80GB"
		}
		return "A100 " + size + " " + form, true
	case strings.HasPrefix(c, "h100"):
		switch {
		case form == "NVL" || (mem > 90 && mem < 100):
			return "H100 NVL", true
		case form == "SXM":
			return "H100 SXM", true
		case form == "PCIe":
			return "H100 PCIe", true
		}
	case strings.HasPrefix(c, "teslav100"), strings.HasPrefix(c, "v100"):
		if mem > 20 || strings.Contains(c, "32") {
			return "V100 32GB", true
		}
		return "V100 16GB", true
	case strings.HasPrefix(c, "gh200"):
		return "GH200", true
	case strings.HasPrefix(c, "h200"):
		return "H200", true
	case strings.HasPrefix(c, "b200"):
		return "B200", true
	case strings.HasPrefix(c, "mi300x"), strings.HasPrefix(c, "instinctmi300x"):
		return "MI300X", true
	case strings.Contains(c, "6000"):
		// RTX 6000 Ada, Quadro RTX 6000, RTX PRO 6000 and RTX A6000 share a number.
		switch {
		case strings.Contains(c, "a6000"):
			return "RTX A6000", true
		case strings.Contains(c, "pro6000"):
			return "RTX PRO 6000", true
		case strings.Contains(c, "ada"):
			return "RTX 6000 Ada", true
		case strings.HasPrefix(c, "q") || strings.Contains(c, "quadro") || (c == "rtx6000" && mem > 0 && mem <= 24):
			return "Quadro RTX 6000", true
		}
	}
	if form == "PCIe" {
		c = strings.TrimSuffix(c, "pcie")
	}
	c = strings.TrimSuffix(c, "oam")
	for _, key := range []string{c, strings.TrimPrefix(c, "tesla"), strings.TrimSuffix(c, "sxm")} {
		if g, ok := byAlias[key]; ok {
			return g.Name, true
		}
	}
	// Trailing words that only describe packaging ("... Blackwell",
	// "... Founders Edition") may go; any other leftover word names a
	// different card ("RTX 4090 D", "RTX 3080 Laptop", "RTX A4000 Ada"),
	// which stays unknown rather than guessed.
	words := strings.Fields(s)
	for len(words) > 1 && filler[words[len(words)-1]] {
		words = words[:len(words)-1]
		if g, ok := byAlias[compact(strings.Join(words, " "))]; ok {
			return g.Name, true
		}
	}
	return strings.TrimSpace(raw), false
}

// SortGPUNames orders GPU names by catalog order, unknown names last and
// alphabetically.
func SortGPUNames(names []string) {
	pos := func(n string) int {
		for i := range catalog {
			if catalog[i].Name == n {
				return i
			}
		}
		return len(catalog)
	}
	sort.SliceStable(names, func(i, j int) bool {
		pi, pj := pos(names[i]), pos(names[j])
		if pi != pj {
			return pi < pj
		}
		return names[i] < names[j]
	})
}
