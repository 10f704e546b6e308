# Installs everything but the binary, at install time: `cmake --install` and
# cpack run this with the prefix of that moment (--prefix, or the configured
# one), so the paths the unit, the settings file and the man page name are the
# ones they are installed at. install() in CMakeLists.txt sets the NOTESD_*
# variables first.

set(prefix "${CMAKE_INSTALL_PREFIX}")
# As GNUInstallDirs has it: /etc for a system install, PREFIX/etc otherwise.
if(prefix STREQUAL "/usr")
  set(SYSCONFDIR /etc)
else()
  set(SYSCONFDIR "${prefix}/etc")
endif()
set(BINDIR "${prefix}/bin")
set(DATADIR "${prefix}/share/notesd")
set(DOCDIR "${prefix}/share/doc/notesd")
set(MANDIR "${prefix}/share/man")
set(UNITDIR "${prefix}/lib/systemd/system")

set(stage "${NOTESD_STAGE_DIR}")
file(REMOVE_RECURSE "${stage}")
file(MAKE_DIRECTORY "${stage}/doc")
configure_file("${NOTESD_PACKAGING_DIR}/notesd.service.in" "${stage}/notesd.service" @ONLY)
configure_file("${NOTESD_PACKAGING_DIR}/notesd.default.in" "${stage}/notesd" @ONLY)
configure_file("${NOTESD_MAN_IN}" "${stage}/notesd.8" @ONLY)

# gzip -9n: no name or time stamp in the header, so the same input gives the same bytes.
function(notesd_gzip from to)
  execute_process(COMMAND gzip -9n -c "${from}" OUTPUT_FILE "${to}" RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "gzip ${from}: ${rc}")
  endif()
endfunction()
notesd_gzip("${stage}/notesd.8" "${stage}/notesd.8.gz")
notesd_gzip("${NOTESD_PACKAGING_DIR}/changelog" "${stage}/doc/changelog.Debian.gz")
# Every page the man page and these pages point to (packaging/tests checks the links).
foreach(page install configuration api api-reference metrics decisions journal)
  notesd_gzip("${NOTESD_SOURCE_DIR}/docs/${page}.md" "${stage}/doc/${page}.md.gz")
endforeach()

set(ro OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
file(INSTALL "${stage}/notesd.8.gz" DESTINATION "${MANDIR}/man8" PERMISSIONS ${ro})
file(INSTALL "${stage}/notesd.service" DESTINATION "${UNITDIR}" PERMISSIONS ${ro})
file(INSTALL "${stage}/notesd" DESTINATION "${SYSCONFDIR}/default" PERMISSIONS ${ro})
file(GLOB docs "${stage}/doc/*.gz")
file(INSTALL ${docs} "${NOTESD_PACKAGING_DIR}/copyright" DESTINATION "${DOCDIR}" PERMISSIONS ${ro})
file(INSTALL "${NOTESD_SOURCE_DIR}/sql/schema.sql" "${NOTESD_SOURCE_DIR}/sql/seed.sql"
     "${NOTESD_SOURCE_DIR}/sql/reset.sql" "${NOTESD_SOURCE_DIR}/sql/pg_stat_statements.sql"
     DESTINATION "${DATADIR}/sql" PERMISSIONS ${ro})
file(INSTALL "${NOTESD_SOURCE_DIR}/loadtests/static/" DESTINATION "${DATADIR}/static"
     FILE_PERMISSIONS ${ro})
