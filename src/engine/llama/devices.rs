//! The compute backends this build has and the devices they found: what
//! `n_gpu_layers` and `main_gpu` are checked against, so that asking for a
//! GPU on a machine or build without one is an error, never a silent run on
//! the CPU.

use llama_cpp_2::{list_llama_ggml_backend_devices, LlamaBackendDeviceType};

use crate::backend::error::LoadError;
use crate::backend::params::LoadParams;

/// The backends compiled into this build, `cpu` first.
pub fn compiled_backends() -> Vec<&'static str> {
    let mut backends = vec!["cpu"];
    if cfg!(feature = "cuda") {
        backends.push("cuda");
    }
    if cfg!(feature = "vulkan") {
        backends.push("vulkan");
    }
    if cfg!(feature = "metal") {
        backends.push("metal");
    }
    backends
}

/// A device a backend found.
#[derive(Debug, Clone, PartialEq)]
pub struct Device {
    /// ggml's name (`CPU`, `CUDA0`, `Vulkan0`, `MTL0`).
    pub name: String,
    /// What the driver calls it (`NVIDIA H200`).
    pub description: String,
    /// The backend, in lower case (`cpu`, `cuda`, `vulkan`, `metal`).
    pub backend: String,
    /// `cpu`, `gpu`, `igpu` or `accel`.
    pub kind: &'static str,
    pub memory_total: u64,
    pub memory_free: u64,
}

impl Device {
    /// Whether layers can be offloaded to it.
    pub fn is_gpu(&self) -> bool {
        matches!(self.kind, "gpu" | "igpu")
    }
}

/// Every device of every compiled backend, in ggml's order (the backend
/// must be initialised: `backend()`).
pub fn devices() -> Vec<Device> {
    list_llama_ggml_backend_devices()
        .into_iter()
        .map(|d| Device {
            name: d.name,
            description: d.description,
            backend: d.backend.to_ascii_lowercase(),
            kind: match d.device_type {
                LlamaBackendDeviceType::Cpu => "cpu",
                LlamaBackendDeviceType::Gpu => "gpu",
                LlamaBackendDeviceType::IntegratedGpu => "igpu",
                LlamaBackendDeviceType::Accelerator => "accel",
                LlamaBackendDeviceType::Unknown => "unknown",
            },
            memory_total: d.memory_total as u64,
            memory_free: d.memory_free as u64,
        })
        .collect()
}

/// Refuse `n_gpu_layers > 0` or a `main_gpu` with no GPU to honour them.
/// `Ok(Some(i))`: ggml's index of the device `main_gpu` names.
pub fn check(params: &LoadParams) -> Result<Option<usize>, LoadError> {
    let wants_gpu = params.n_gpu_layers > 0 || params.main_gpu.is_some();
    if !wants_gpu {
        return Ok(None);
    }
    let compiled = compiled_backends();
    let backends = compiled.join(", ");
    let asked = match (params.n_gpu_layers, params.main_gpu) {
        (0, Some(i)) => format!("main_gpu = {i}"),
        (n, _) => format!("n_gpu_layers = {n}"),
    };
    if compiled.len() == 1 {
        return Err(LoadError::NoGpuBackend { asked, backends });
    }
    let all = devices();
    let gpus: Vec<(usize, &Device)> = all.iter().enumerate().filter(|(_, d)| d.is_gpu()).collect();
    if gpus.is_empty() {
        let found = all
            .iter()
            .map(|d| format!("{} ({})", d.name, d.description))
            .collect::<Vec<_>>()
            .join(", ");
        return Err(LoadError::NoGpuDevice {
            asked,
            backends,
            found,
        });
    }
    let Some(index) = params.main_gpu else {
        return Ok(None);
    };
    match gpus.get(index as usize) {
        Some((device, _)) => Ok(Some(*device)),
        None => {
            let names = gpus
                .iter()
                .enumerate()
                .map(|(i, (_, d))| format!("{i}: {} ({})", d.name, d.description))
                .collect::<Vec<_>>()
                .join(", ");
            Err(LoadError::NoSuchGpu {
                index,
                count: gpus.len(),
                names,
            })
        }
    }
}

/// The name of the quantisation in `general.file_type` (llama.cpp's
/// `llama_ftype`).
pub fn file_type_name(file_type: u32) -> String {
    let name = match file_type {
        0 => "F32",
        1 => "F16",
        2 => "Q4_0",
        3 => "Q4_1",
        7 => "Q8_0",
        8 => "Q5_0",
        9 => "Q5_1",
        10 => "Q2_K",
        11 => "Q3_K_S",
        12 => "Q3_K_M",
        13 => "Q3_K_L",
        14 => "Q4_K_S",
        15 => "Q4_K_M",
        16 => "Q5_K_S",
        17 => "Q5_K_M",
        18 => "Q6_K",
        19 => "IQ2_XXS",
        20 => "IQ2_XS",
        21 => "Q2_K_S",
        22 => "IQ3_XS",
        23 => "IQ3_XXS",
        24 => "IQ1_S",
        25 => "IQ4_NL",
        26 => "IQ3_S",
        27 => "IQ3_M",
        28 => "IQ2_S",
        29 => "IQ2_M",
        30 => "IQ4_XS",
        31 => "IQ1_M",
        32 => "BF16",
        36 => "TQ1_0",
        37 => "TQ2_0",
        38 => "MXFP4_MOE",
        other => return format!("file type {other}"),
    };
    name.to_owned()
}
