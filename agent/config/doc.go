// Package config is the node agent's configuration: a Config, its
// Default and Validate, and one table of settings (settings.go) from which
// the three ways to set them are derived. Each setting is a flag --name,
// an environment variable STRATA_NAME (upper case, - as _; two keep older
// names: STRATA_HOOK_INSTALL_DIR for --install-hook and
// STRATA_HOOK_FILES_DIR for --hook-files) and a key name (- as _) of the
// JSON config file that --config or STRATA_CONFIG names:
//
//	{"collector": "collector.example:7070", "hook_max_sessions": 512, "http_insecure": true}
//
// Load layers them: Default, then the file, then the environment, then the
// flags; an unknown file key or a value that does not parse is an
// ErrConfig naming it. Validate is the caller's next step.
package config
