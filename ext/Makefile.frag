
# The extension, built by cargo for the PHP that configure was given
# (ext-php-rs reads PHP and PHP_CONFIG); cargo decides what is stale.
.PHONY: $(phplibdir)/infer.so
$(phplibdir)/infer.so:
	cd "$(INFER_CRATE_DIR)" && PHP="$(PHP_EXECUTABLE)" PHP_CONFIG="$(INFER_PHP_CONFIG)" \
		CARGO_TARGET_DIR="$(INFER_CARGO_TARGET_DIR)" "$(CARGO)" build --release --locked
	mkdir -p "$(phplibdir)"
	cp "$(INFER_CARGO_TARGET_DIR)/release/libinfer.so" "$@.tmp" && mv "$@.tmp" "$@"
