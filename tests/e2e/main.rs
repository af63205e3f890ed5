//! End-to-end tests: the real `loadhost` binary running real plugins (wasm components built from
//! `plugins/` and `tests/plugins/` by `cargo xtask plugins`, named by `guests`), with real files
//! read back.

#![allow(clippy::unwrap_used, reason = "a test helper that cannot set up must fail loudly")]

mod async_tasks;
mod bad_input;
mod cache;
mod cgroup;
mod ci_reports;
mod closed_model;
mod common;
mod compare;
mod control;
mod data_feed;
mod distributed;
mod distributed_oci;
mod endpoints;
mod generator_health;
mod generator_reports;
#[deny(dead_code, reason = "a fixture no test runs is a folder to delete or a test to write")]
mod guests;
mod hostile;
mod http;
mod http_cmd;
mod http_features;
mod http_phases;
mod http_proxy_tls;
mod k6_scripts;
mod languages;
mod lifecycle;
mod locust_files;
mod memory;
mod open_model;
mod outputs;
mod overrun;
mod plugin_metrics;
mod plugin_options;
mod protocols;
mod push;
mod receivers;
mod registry;
mod registry_hostile;
mod rogue;
mod runner_js;
mod runner_python;
mod sandbox;
mod say_why;
mod scenarios;
mod scripts;
mod sdk_checks;
mod signing;
mod steps;
mod stop_signal;
mod streams;
mod target_process;
mod thresholds;
mod version;
