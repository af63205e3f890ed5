//! A real workload (it exports `loadhost:plugin/doer`) that also imports an interface no loadhost
//! provides: the host must reject it before any load, naming the import.

wit_bindgen::generate!({
    inline: r#"
        package test:bad-import;
        interface secret-store { fetch: func(key: string) -> string; }
        world bad-import {
            include loadhost:plugin/workload@0.1.0;
            import secret-store;
        }
    "#,
    path: "../../../wit",
    world: "test:bad-import/bad-import",
    generate_all,
});

struct Plugin;

impl exports::loadhost::plugin::doer::Guest for Plugin {
    fn do_task(_task: loadhost::plugin::types::Task) -> Result<(), loadhost::plugin::types::TaskError> {
        let _ = test::bad_import::secret_store::fetch("token");
        Ok(())
    }
}

export!(Plugin);
