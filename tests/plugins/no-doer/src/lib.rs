//! A valid component that exports something other than `loadhost:plugin/doer`: the host must
//! reject it before any load, naming the missing export.

wit_bindgen::generate!({
    inline: r#"
        package test:no-doer;
        interface greeter { greet: func() -> string; }
        world not-a-workload { export greeter; }
    "#,
});

struct Greeter;

impl exports::test::no_doer::greeter::Guest for Greeter {
    fn greet() -> String {
        "hello".into()
    }
}

export!(Greeter);
