# The text library's two C/C++ dependencies built from source for WebAssembly (docs/web.md),
# included by cmake/wasm.cmake when TENSORVM_WASM_TEXT_SOURCES names the folder that
# .ci/wasm-text-sources fills:
#   sentencepiece-0.1.99/  PyPI's sdist of sentencepiece 0.1.99, whose sentencepiece/ folder
#                          holds the C++ library with its bundled protobuf-lite (the same
#                          public header as Debian bookworm's libsentencepiece-dev 0.1.97-3,
#                          which the native build links);
#   pcre2-10.42/           Debian bookworm's source package of PCRE2 10.42 (the native one).
# Only what the text library calls is compiled: sentencepiece's processor (no trainer) and
# PCRE2's 8-bit library without JIT (WebAssembly cannot generate code at run time;
# text/regex_split.cpp already falls back to the interpreter, which matches the same).
# The targets are tensorvm_wasm_sentencepiece and tensorvm_wasm_pcre2; the text library links
# them in place of pkg-config's (CMakeLists.txt, "the text library").
include_guard(GLOBAL)
enable_language(C)  # PCRE2 is C

set(_src ${TENSORVM_WASM_TEXT_SOURCES})
set(_spm ${_src}/sentencepiece-0.1.99/sentencepiece)
set(_pcre ${_src}/pcre2-10.42)
# The generated headers live beside the sources, not in the build tree: the SIMD and scalar
# builds then compile these files with equal command lines, and ccache serves the second.
set(_gen ${_src}/generated)
foreach(f ${_spm}/src/sentencepiece_processor.cc ${_pcre}/src/pcre2_compile.c)
  if(NOT EXISTS ${f})
    message(FATAL_ERROR "TENSORVM_WASM_TEXT_SOURCES=${_src}: ${f} is missing (run .ci/wasm-text-sources ${_src})")
  endif()
endforeach()

# ---- sentencepiece 0.1.99: its src/CMakeLists.txt's SPM_SRCS with the built-in protobuf
set(_pb ${_spm}/third_party/protobuf-lite)
set(_spm_sources)
foreach(f arena arenastring bytestream coded_stream common extension_set generated_enum_util
          generated_message_table_driven_lite generated_message_util implicit_weak_message int128 io_win32
          message_lite parse_context repeated_field status statusor stringpiece stringprintf structurally_valid
          strutil time wire_format_lite zero_copy_stream zero_copy_stream_impl zero_copy_stream_impl_lite)
  list(APPEND _spm_sources ${_pb}/${f}.cc)
endforeach()
foreach(f builtin_pb/sentencepiece.pb builtin_pb/sentencepiece_model.pb bpe_model char_model error filesystem
          model_factory model_interface normalizer sentencepiece_processor unigram_model util word_model)
  list(APPEND _spm_sources ${_spm}/src/${f}.cc)
endforeach()
list(APPEND _spm_sources ${_spm}/third_party/absl/flags/flag.cc)
file(CONFIGURE OUTPUT ${_gen}/spm/config.h  # written only when it changes: no rebuild per configure
     CONTENT "#pragma once\n#define VERSION \"0.1.99\"\n#define PACKAGE \"sentencepiece\"\n#define PACKAGE_STRING \"sentencepiece\"\n")
add_library(tensorvm_wasm_sentencepiece STATIC ${_spm_sources})
# The public header's folder only for users; the library's own includes privately.
target_include_directories(tensorvm_wasm_sentencepiece SYSTEM PUBLIC $<BUILD_INTERFACE:${_spm}/src>)
target_include_directories(tensorvm_wasm_sentencepiece SYSTEM PRIVATE ${_gen}/spm ${_pb}
                           ${_spm}/src/builtin_pb ${_spm}/third_party ${_spm})
# As its own CMakeLists defines them (HAVE_PTHREAD: std::mutex and friends, which compile
# to no-ops without -pthread); warnings are theirs, not ours.
target_compile_definitions(tensorvm_wasm_sentencepiece PRIVATE HAVE_PTHREAD=1 _USE_INTERNAL_STRING_VIEW)
target_compile_options(tensorvm_wasm_sentencepiece PRIVATE -w)

# ---- PCRE2 10.42, 8-bit, the build NON-AUTOTOOLS-BUILD describes (no configure run)
configure_file(${_pcre}/src/pcre2.h.generic ${_gen}/pcre2/pcre2.h COPYONLY)
configure_file(${_pcre}/src/config.h.generic ${_gen}/pcre2/config.h COPYONLY)
configure_file(${_pcre}/src/pcre2_chartables.c.dist ${_gen}/pcre2/pcre2_chartables.c COPYONLY)
set(_pcre_sources ${_gen}/pcre2/pcre2_chartables.c)
foreach(f auto_possess compile config context convert dfa_match error extuni find_bracket jit_compile maketables
          match match_data newline ord2utf pattern_info script_run serialize string_utils study substitute
          substring tables ucd valid_utf xclass)
  list(APPEND _pcre_sources ${_pcre}/src/pcre2_${f}.c)
endforeach()
add_library(tensorvm_wasm_pcre2 STATIC ${_pcre_sources})
target_include_directories(tensorvm_wasm_pcre2 SYSTEM PUBLIC $<BUILD_INTERFACE:${_gen}/pcre2>)
target_include_directories(tensorvm_wasm_pcre2 PRIVATE ${_pcre}/src)
target_compile_definitions(tensorvm_wasm_pcre2 PUBLIC PCRE2_STATIC
                           PRIVATE HAVE_CONFIG_H PCRE2_CODE_UNIT_WIDTH=8 SUPPORT_PCRE2_8=1 SUPPORT_UNICODE=1
                                   HAVE_MEMMOVE=1 HAVE_STDLIB_H=1 HAVE_STRERROR=1 HAVE_LIMITS_H=1 HAVE_STDINT_H=1
                                   HAVE_INTTYPES_H=1)
target_compile_options(tensorvm_wasm_pcre2 PRIVATE -w)
