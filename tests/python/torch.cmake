# The gdp.torch tests (the PyTorch importer, pure Python): included by tests/python/CMakeLists.txt
# with the bindings, else by tests/CMakeLists.txt.
# Each is skipped (exit 77) where PyTorch or torchvision is missing, and says so.
foreach(t export coverage flops measure tied)
  add_test(NAME python/torch-${t}
           COMMAND /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/test_torch_${t}.py
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(python/torch-${t} PROPERTIES
    ENVIRONMENT "PYTHONPATH=${PROJECT_SOURCE_DIR}/python;GDP_BIN=$<TARGET_FILE:gdp>;GDP_SOURCE_DIR=${PROJECT_SOURCE_DIR}"
    SKIP_RETURN_CODE 77
    TIMEOUT 900
    LABELS python)
endforeach()
