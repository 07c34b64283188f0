package heuristics

import "github.com/stratatrace/strata/collector/job"

// UnknownJobType is the job type of a job no rule matches.
const UnknownJobType = "Unknown"

// matchJobType applies the rules of docs/heuristics.md#job-types: rules of the job's application
// type in order, the default rule last; a rule matches when the
// configuration has its key and the whole value matches its pattern.
// Rules must have been compiled by Config.Validate.
func matchJobType(rules []JobTypeRule, j *job.Job) string {
	var def *JobTypeRule
	for i := range rules {
		r := &rules[i]
		if r.Type != string(j.Type) {
			continue
		}
		if r.Default {
			if def == nil {
				def = r
			}
			continue
		}
		if ruleMatches(r, j.Conf) {
			return r.Name
		}
	}
	if def != nil && ruleMatches(def, j.Conf) {
		return def.Name
	}
	return UnknownJobType
}

func ruleMatches(r *JobTypeRule, conf map[string]string) bool {
	v, ok := conf[r.Conf]
	if !ok {
		return false
	}
	return r.re == nil || r.re.MatchString(v)
}
