#![warn(missing_docs)]
//! What this workspace's binaries share that is not the op: ending the process on a panic.

use std::sync::Once;

/// The exit status after a panic: the one Rust gives a panic on the main thread.
pub const PANIC_EXIT_STATUS: i32 = 101;

/// Makes a panic on any thread end the process: the default message, one line saying so, then
/// exit status [`PANIC_EXIT_STATUS`].
///
/// Burn 0.22 runs a GPU device's work on a thread of its own and catches a panic there; where the
/// panic leaves the work undone, a caller waiting on it (a sync, a read-back) waits for ever. A
/// program that calls this first ends with the panic's message instead. It also ends panics that
/// Burn would have caught and survived (CubeCL's autotune recovers from some: on lavapipe a
/// convolution's tuned gradient panicked and was then computed by another kernel, after minutes;
/// `docs/conv-grad-panic.md`): call it only in programs that treat every panic as fatal.
/// Installing it twice is the same as once.
pub fn exit_on_panic() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let default_hook = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            default_hook(info);
            let thread = std::thread::current();
            eprintln!(
                "error: thread '{}' panicked; ending the process (status {PANIC_EXIT_STATUS}) \
                 rather than waiting on work that will not finish",
                thread.name().unwrap_or("<unnamed>")
            );
            end_now(PANIC_EXIT_STATUS);
        }));
    });
}

/// Ends the process without running exit handlers. `exit` would run them, and on Linux also the
/// calling thread's thread-local destructors: on Burn's device thread, CubeCL's state there then
/// panics again, and the process aborts instead (seen on lavapipe). Other platforms end by
/// `exit` (untested with a GPU device thread).
fn end_now(status: i32) -> ! {
    #[cfg(unix)]
    // SAFETY: `_exit` takes any status and does not return; it touches no Rust state.
    unsafe {
        libc::_exit(status)
    }
    #[cfg(not(unix))]
    std::process::exit(status)
}

/// A panic on another thread ends a process whose main thread waits on that thread's work, as a
/// training step waits on Burn's device thread. Each case runs this test binary again as a child
/// that plants the panic; the parent watches it.
#[cfg(test)]
mod tests {
    use std::process::{Command, ExitStatus, Stdio};
    use std::sync::mpsc;
    use std::time::{Duration, Instant};

    use super::{PANIC_EXIT_STATUS, exit_on_panic};

    /// Set in the child: the case it plays.
    const CHILD: &str = "BURN_UNPOOL_TOOLS_TEST_CHILD";
    const PLANTED: &str = "planted panic on a worker thread";

    /// Whether this process is the child of `case`.
    fn is_child(case: &str) -> bool {
        std::env::var(CHILD).is_ok_and(|child| case.ends_with(&child))
    }

    /// In the child: a thread named `device` runs `first`, then panics, while this one waits for
    /// a result it will never get (the sender stays alive here, so the wait cannot end on its own).
    fn plant_panic_and_wait(first: fn()) {
        let (sender, receiver) = mpsc::channel::<()>();
        std::thread::Builder::new()
            .name("device".into())
            .spawn(move || {
                first();
                panic!("{PLANTED}")
            })
            .expect("a thread");
        let _keep = sender;
        receiver.recv().expect("never sent");
    }

    /// Runs the test `case` in a child, waits up to `limit`, and returns its status and stderr,
    /// or `None` (after killing it) where it still runs then.
    fn run_child(case: &str, limit: Duration) -> Option<(ExitStatus, String)> {
        let name = case.rsplit("::").next().expect("a name");
        let mut child = Command::new(std::env::current_exe().expect("this test binary"))
            .args(["--exact", case, "--nocapture", "--test-threads", "1"])
            .env(CHILD, name)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the child starts");
        let start = Instant::now();
        loop {
            if child.try_wait().expect("the child's status").is_some() {
                let output = child.wait_with_output().expect("its output");
                let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
                return Some((output.status, stderr));
            }
            if start.elapsed() > limit {
                child.kill().expect("the child is killed");
                child.wait().expect("the child ends");
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Runs the test `case` in a child that the hook must end within `limit`, and returns its
    /// stderr once its status is the hook's.
    fn ended_by_the_hook(case: &str, limit: Duration) -> String {
        let (status, stderr) = run_child(case, limit)
            .unwrap_or_else(|| panic!("the child still ran {limit:?} after it started"));
        assert_eq!(status.code(), Some(PANIC_EXIT_STATUS), "{stderr}");
        stderr
    }

    /// The path of a test of this module, as the harness names it.
    fn case(name: &str) -> String {
        format!(
            "{}::{name}",
            module_path!().split_once("::").expect("a crate").1
        )
    }

    #[test]
    fn a_panic_on_another_thread_ends_the_process_with_its_message() {
        let case = case("a_panic_on_another_thread_ends_the_process_with_its_message");
        if is_child(&case) {
            exit_on_panic();
            plant_panic_and_wait(|| ());
            return;
        }
        let stderr = ended_by_the_hook(&case, Duration::from_secs(60));
        assert!(stderr.contains(PLANTED), "the panic's message: {stderr}");
        assert!(stderr.contains("thread 'device' panicked"), "{stderr}");
        assert!(stderr.contains("ending the process"), "{stderr}");
    }

    /// What the hook is for: without it the same child waits for as long as it is let.
    #[test]
    fn without_it_the_waiting_thread_outlives_the_panic() {
        let case = case("without_it_the_waiting_thread_outlives_the_panic");
        if is_child(&case) {
            plant_panic_and_wait(|| ());
            return;
        }
        assert!(
            run_child(&case, Duration::from_secs(3)).is_none(),
            "the child ended on its own: the case no longer shows a wait"
        );
    }

    /// A panic on a thread whose thread-local state panics when it is destroyed, as Burn's device
    /// thread's does: ending the process must not destroy it (`exit` would, and abort). Unix
    /// only: elsewhere the process ends by `exit`.
    #[cfg(unix)]
    #[test]
    fn a_thread_whose_state_panics_on_destruction_still_ends_with_the_status() {
        let case = case("a_thread_whose_state_panics_on_destruction_still_ends_with_the_status");
        if is_child(&case) {
            struct PanicsOnDrop;
            impl Drop for PanicsOnDrop {
                fn drop(&mut self) {
                    panic!("thread-local state destroyed");
                }
            }
            thread_local! {
                static STATE: PanicsOnDrop = const { PanicsOnDrop };
            }
            exit_on_panic();
            plant_panic_and_wait(|| STATE.with(|_| ()));
            return;
        }
        let stderr = ended_by_the_hook(&case, Duration::from_secs(60));
        assert!(!stderr.contains("destroyed"), "{stderr}");
    }

    /// A panic on Burn's own device thread, which the hook names (not the test's thread, nor the
    /// main one). The trigger is the Burn version's: on 0.22.1 the convolution gradient below; on
    /// 0.23, where CubeCL 0.12 no longer panics on it (docs/conv-grad-panic.md), a panic planted
    /// in a task the device runs exclusively, on its own thread.
    #[cfg(feature = "wgpu")]
    #[test]
    fn a_panic_on_burns_device_thread_ends_the_process() {
        use burn::tensor::{Device, DeviceKind};

        let case = case("a_panic_on_burns_device_thread_ends_the_process");
        if is_child(&case) {
            exit_on_panic();
            let device = Device::wgpu(DeviceKind::default());
            let burn::backend::DispatchDevice::Cube(cube) = device.as_dispatch().clone().inner()
            else {
                unreachable!("a wgpu device is a CubeCL device")
            };
            #[cfg(not(burn_next))]
            conv_gradient_past(device, cube.client().properties().memory.max_page_size);
            #[cfg(burn_next)]
            let _: Result<(), _> = cube.client().exclusive(|| panic!("{PLANTED}"));
            eprintln!("the device's work returned: nothing ended the process");
            return;
        }
        let stderr = ended_by_the_hook(&case, Duration::from_secs(600));
        let trigger = if cfg!(burn_next) {
            PLANTED
        } else {
            "Cube count too big"
        };
        assert!(stderr.contains(trigger), "{stderr}");
        assert!(stderr.contains("ending the process"), "{stderr}");
        for caller in [case.as_str(), "main"] {
            let named = format!("error: thread '{caller}' panicked");
            assert!(!stderr.contains(&named), "{stderr}");
        }
    }

    /// The input gradient of a convolution whose tuned kernels panic on Burn 0.22.1's device
    /// thread (docs/conv-grad-panic.md): 4 images of 360 x 480 (691200 columns, past the 524280
    /// the fallback kernel launches) and enough channels that the 7x7 column matrix passes
    /// `largest_allocation` (on lavapipe, 1 channel: 135475200 bytes, past 128 MiB).
    #[cfg(all(feature = "wgpu", not(burn_next)))]
    fn conv_gradient_past(device: burn::tensor::Device, largest_allocation: u64) {
        use burn::tensor::module::conv2d;
        use burn::tensor::ops::ConvOptions;
        use burn::tensor::{Distribution, Tensor};

        let (pixels, taps) = (4 * 360 * 480, 49);
        let channels = (largest_allocation + 1).div_ceil(taps * pixels * 4) as usize;
        let device = device.autodiff();
        let x = Tensor::<4>::random([4, channels, 360, 480], Distribution::Default, &device)
            .require_grad();
        let w = Tensor::<4>::random([channels, channels, 7, 7], Distribution::Default, &device);
        let y = conv2d(
            x.clone(),
            w,
            None,
            ConvOptions::new([1, 1], [3, 3], [1, 1], 1),
        );
        let grads = y.sum().backward();
        let _ = x
            .grad(&grads)
            .expect("a gradient")
            .sum()
            .into_scalar::<f32>();
    }

    /// Installed twice, it still prints its line once and ends with the same status.
    #[test]
    fn installing_it_twice_is_installing_it_once() {
        let case = case("installing_it_twice_is_installing_it_once");
        if is_child(&case) {
            exit_on_panic();
            exit_on_panic();
            plant_panic_and_wait(|| ());
            return;
        }
        let stderr = ended_by_the_hook(&case, Duration::from_secs(60));
        assert_eq!(stderr.matches("ending the process").count(), 1, "{stderr}");
    }
}
