# lit configuration for the Tile IR tests: each .tkir (or .tk) file carries RUN lines that
# pipe tkc's output through FileCheck.
import os
import lit.formats

config.name = 'tk-ir'
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = ['.tkir', '.tk']
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.environ.get('TK_LIT_EXEC_ROOT', config.test_source_root)
tkc = os.environ['TK_TKC']
filecheck = os.environ['TK_FILECHECK']
config.substitutions.append(('%tkc', tkc))
config.substitutions.append(('FileCheck', filecheck))
config.environment['NO_COLOR'] = '1'
