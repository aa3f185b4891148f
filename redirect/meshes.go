/*
Copyright The meshinit Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package redirect

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// MeshAnnotation is a service mesh's own pod annotation that meshinit reads
// with the meaning the mesh's CNI plugin gives it. The chart's presets
// (charts/meshinit/presets/<mesh>.yaml) list them; the chart writes the
// selected preset's into the webhook's configuration, and its
// MutatingAdmissionPolicy and ValidatingAdmissionPolicy read the same list.
type MeshAnnotation struct {
	// Annotation is the mesh's pod annotation.
	Annotation string `json:"annotation"`
	// Setting is the setting (its flag name, one pods set by annotation)
	// the annotation reads as; "" for an annotation that is only checked.
	Setting string `json:"setting,omitempty"`
	// Values are the only values an annotation without a Setting may
	// have: any other is refused by name (an interception mode meshinit
	// does not implement, say).
	Values []string `json:"values,omitempty"`
}

// ValidateMeshAnnotations checks a preset's annotations: each reads as a
// setting pods set by annotation (at most one annotation a setting), or
// lists the values it may have.
func ValidateMeshAnnotations(mesh []MeshAnnotation) error {
	var errs []error
	seen := map[string]string{}
	for _, m := range mesh {
		switch {
		case m.Annotation == "":
			errs = append(errs, errors.New("annotation: required"))
		case m.Setting == "" && len(m.Values) == 0:
			errs = append(errs, fmt.Errorf("annotation %s: needs a setting or values", m.Annotation))
		case m.Setting != "" && len(m.Values) > 0:
			errs = append(errs, fmt.Errorf("annotation %s: a setting or values, not both", m.Annotation))
		case m.Setting != "":
			s, ok := settingByKey(m.Setting)
			switch {
			case !ok || s.annotation == "":
				errs = append(errs, fmt.Errorf("annotation %s: setting %s is not one pods set by annotation", m.Annotation, QuoteShort(m.Setting)))
			case seen[m.Setting] != "":
				errs = append(errs, fmt.Errorf("annotation %s: setting %s is read from %s already", m.Annotation, m.Setting, seen[m.Setting]))
			}
			seen[m.Setting] = m.Annotation
		}
	}
	return errors.Join(errs...)
}

func settingByKey(key string) (setting, bool) {
	for _, s := range settings {
		if s.key == key {
			return s, true
		}
	}
	return setting{}, false
}

// isList reports whether the setting holds a list; exclude lists have keys
// starting with "exclude-".
func (s setting) isList() bool {
	return s.kind == kindPorts || s.kind == kindCIDRs || s.kind == kindIDs || s.kind == kindInterfaces
}

func (s setting) isExclude() bool { return s.isList() && strings.HasPrefix(s.key, "exclude-") }

// joinLists joins two list values: a, or b, or both separated by a comma.
func joinLists(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "," + b
}

// FromPodAnnotations is [FromAnnotations] reading, besides meshinit's own
// annotations, the mesh's (mesh: a preset's [MeshAnnotation] list). A
// mesh's annotation is first read alone, and refused naming it when it
// cannot be read (for an exclude list, "*" too). Then:
//
//   - an exclude list's annotation adds to the setting (the pod's
//     traffic.meshinit.io annotation, else the chart's value): exclusions
//     add up, so neither annotation can take back what the other excludes;
//   - an include list's annotation sets the setting as meshinit's own
//     would; with both set, both are captured ("*" when either is "*");
//   - a port, ID or enum annotation sets the setting as meshinit's own
//     would; both set is refused, naming both;
//   - an annotation that is only checked must have one of its values.
//
// A value made of both annotations that cannot be used (over the list
// limits) names both. The RedirectPolicy's policy checks each annotation
// on its own, and the init container's arguments, which hold the result.
func FromPodAnnotations(annotations map[string]string, base Config, mesh []MeshAnnotation) (Config, error) {
	if len(mesh) == 0 {
		return FromAnnotations(annotations, base)
	}
	var errs []error
	for _, m := range mesh {
		if v, ok := annotations[m.Annotation]; ok && m.Setting == "" && !slices.Contains(m.Values, v) {
			errs = append(errs, &SettingError{Key: m.Annotation, Name: "annotation " + m.Annotation, Value: v,
				Err: fmt.Errorf("must be %s (meshinit implements no other)", strings.Join(m.Values, " or "))})
		}
	}
	c := base
	for _, s := range settings {
		if s.annotation == "" {
			continue
		}
		own, ownSet := annotations[s.annotation]
		value, name, shown := own, "annotation "+s.annotation, own
		if !ownSet {
			value, name = s.get(&base), ""
		}
		if i := slices.IndexFunc(mesh, func(m MeshAnnotation) bool { return m.Setting == s.key }); i >= 0 {
			ma := mesh[i].Annotation
			if v, ok := annotations[ma]; ok {
				if err := meshValueError(s, v); err != nil {
					errs = append(errs, &SettingError{Key: s.key, Name: "annotation " + ma, Value: v, Err: err})
				} else {
					value, name, shown = combine(s, value, v, ownSet, s.annotation, ma)
					if !s.isList() && ownSet {
						errs = append(errs, &SettingError{Key: s.key, Name: "annotations " + s.annotation + " and " + ma, Value: own,
							Err: fmt.Errorf("both set %s; set one of them", s.key)})
					}
				}
			}
		}
		if name == "" {
			continue // the chart's value, valid
		}
		if err := s.set(&c, value); err != nil {
			errs = append(errs, &SettingError{Key: s.key, Name: name, Value: shown, Err: err})
		}
	}
	if len(errs) > 0 {
		return c, joinErrors(errs)
	}
	return c, renameSettings(c.Validate(), annotationName)
}

// meshValueError is why a mesh's annotation v cannot be read as setting
// s on its own, or nil.
func meshValueError(s setting, v string) error {
	var scratch Config
	if err := s.set(&scratch, v); err != nil {
		return err
	}
	if s.isExclude() && strings.TrimSpace(v) == "*" {
		return errors.New(`"*" is not allowed in an exclude list; list them`)
	}
	return nil
}

// combine is setting s's value read from meshinit's own annotation (or the
// chart's value, when !ownSet) value and the mesh's annotation mv, how
// messages name it, and the value they quote.
func combine(s setting, value, mv string, ownSet bool, own, ma string) (string, string, string) {
	both := "annotations " + own + " and " + ma
	switch {
	case s.isExclude() && ownSet:
		v := joinLists(value, mv)
		return v, both, v
	case s.isExclude():
		return joinLists(value, mv), "annotation " + ma, mv
	case !ownSet:
		return mv, "annotation " + ma, mv
	case !s.isList():
		return value, "annotation " + own, value // both set: refused
	case strings.TrimSpace(value) == "*" || strings.TrimSpace(mv) == "*":
		return "*", both, "*"
	}
	v := joinLists(value, mv)
	return v, both, v
}
