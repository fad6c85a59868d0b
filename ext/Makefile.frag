
# The extension, built by cargo for the PHP that configure was given
# (ext-php-rs reads PHP and PHP_CONFIG); cargo decides what is stale. The
# same build makes `infer-serve`, the supervisor of the shared llama-server
# (`['shared' => true]`): it goes into modules/ beside infer.so, and
# `make install` (what PIE runs) installs everything in modules/ into the
# extension directory, where the extension looks for it.
.PHONY: $(phplibdir)/infer.so
$(phplibdir)/infer.so:
	cd "$(INFER_CRATE_DIR)" && PHP="$(PHP_EXECUTABLE)" PHP_CONFIG="$(INFER_PHP_CONFIG)" \
		CARGO_TARGET_DIR="$(INFER_CARGO_TARGET_DIR)" "$(CARGO)" build --release --locked
	mkdir -p "$(phplibdir)"
	cp "$(INFER_CARGO_TARGET_DIR)/release/libinfer.so" "$@.tmp" && mv "$@.tmp" "$@"
	cp "$(INFER_CARGO_TARGET_DIR)/release/infer-serve" "$(phplibdir)/infer-serve.tmp" \
		&& mv "$(phplibdir)/infer-serve.tmp" "$(phplibdir)/infer-serve"
