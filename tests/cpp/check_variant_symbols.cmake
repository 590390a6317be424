# A kernel variant's object file may define, with external or weak linkage, only names
# inside its own namespace (ops::kernels::<variant>::) and its table. Anything else (an
# inline function from a shared header, a template instantiation outside the namespace)
# would be compiled with this variant's instructions, and the linker could pick that copy
# for the whole program: a scalar build would then die with SIGILL on an older CPU.
#   cmake -DNM=nm -DOBJECT=file.o -DVARIANT=avx2 -P check_variant_symbols.cmake
# Mangled names: ops::kernels::<variant>:: is the prefix _ZN3ops7kernels<len><variant>
# (_ZZN for a function's static locals, _ZGVZN for their guards).
string(LENGTH "${VARIANT}" len)
set(own "^_Z(GVZ|Z)?N3ops7kernels${len}${VARIANT}")
execute_process(COMMAND ${NM} --defined-only ${OBJECT} OUTPUT_VARIABLE out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "nm failed on ${OBJECT}")
endif()
string(REPLACE "\n" ";" lines "${out}")
set(bad "")
set(count 0)
foreach(line IN LISTS lines)
  if(line MATCHES "^[0-9a-fA-F]* ([A-Za-z]) (.*)$")
    set(type ${CMAKE_MATCH_1})
    set(name "${CMAKE_MATCH_2}")
    # lower-case types are local to the object (except w/v: weak, and u: unique global)
    if(type MATCHES "^[A-Zuvw]$")
      math(EXPR count "${count} + 1")
      if(NOT name MATCHES "${own}" AND NOT name MATCHES "^_ZN3ops7kernels[0-9]+k[A-Za-z0-9]*KernelsE$")
        string(APPEND bad "  ${type} ${name}\n")
      endif()
    endif()
  endif()
endforeach()
if(bad)
  message(FATAL_ERROR "variant ${VARIANT} defines shared symbols outside its namespace:\n${bad}")
endif()
message(STATUS "variant ${VARIANT}: ${count} external symbols, all its own")
