package heuristics

import (
	"github.com/stratatrace/strata/collector/job"
)

func sparkJob(props map[string]string, app *job.SparkApp) *job.Job {
	if props == nil {
		props = map[string]string{}
	}
	if app == nil {
		app = &job.SparkApp{}
	}
	return &job.Job{ID: "application_1_0001", AppID: "application_1_0001", Type: job.Spark,
		Status: job.Succeeded, Conf: props, Spark: app}
}
