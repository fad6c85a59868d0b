//! Link settings for the PHP extension. PHP's symbols are resolved when PHP
//! loads the extension; Linux allows that by default, macOS has to be told.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    php_timers();
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if os == "macos" {
        println!("cargo:rustc-cdylib-link-arg=-undefined");
        println!("cargo:rustc-cdylib-link-arg=dynamic_lookup");
    }
}

/// `cfg(php_wall_timer)` when the PHP built for (`PHP`, as ext-php-rs reads
/// it; else `php` on the path) runs its time limit on a per-thread wall
/// clock (a thread-safe PHP on Linux: Zend/zend_max_execution_timer.c,
/// CLOCK_BOOTTIME). Its executor globals then hold the timer, which
/// src/php/timeout.rs reads. Any failure to ask leaves it off.
fn php_timers() {
    println!("cargo:rustc-check-cfg=cfg(php_wall_timer)");
    println!("cargo:rerun-if-env-changed=PHP");
    let php = std::env::var("PHP").unwrap_or_else(|_| "php".to_owned());
    let Ok(out) = std::process::Command::new(php).args(["-n", "-i"]).output() else {
        return;
    };
    let info = String::from_utf8_lossy(&out.stdout);
    if info
        .lines()
        .any(|l| l.trim() == "Zend Max Execution Timers => enabled")
    {
        println!("cargo:rustc-cfg=php_wall_timer");
    }
}
